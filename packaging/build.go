package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
	"github.com/goreleaser/nfpm/v2/rpm"

	"skiff/systemd"
)

//go:embed files
var packagedFiles embed.FS

const (
	pkgName     = "skiff"
	maintainer  = "Skiff maintainers <maintainers@users.noreply.a-seed-aca42da1.example>"
	summary     = "Kafka-compatible message engine in one static binary"
	license     = "Apache-2.0" // of Skiff's own code (LICENSE); SPDX id, also Debian's short name
	description = summary + "\n" +
		"Skiff speaks the Kafka protocol, so every Kafka client works unchanged. Each\n" +
		"node embeds an etcd member for coordination, keeps messages as raw Kafka\n" +
		"record batches in append-only segment files served with sendfile, and keeps\n" +
		"indexes in a local Pebble database. One node alone is a complete cluster.\n" +
		"The same binary is a small Kafka client: skiff topic, produce, consume."
)

// options of one build. Zero values take the defaults of the package doc.
type options struct {
	Version string    // package version; "" derives it from git
	Out     string    // output folder; "" is dist
	Epoch   time.Time // SOURCE_DATE_EPOCH; zero reads the environment, then git
	Release string    // RPM release; "" is 1
}

type result struct {
	Deb, RPM string // paths of the built packages
	Version  string
}

// validVersion is what both dpkg (a native package: no '-') and rpm accept as a
// version: starts with a digit; digits, letters, '.', '+' and '~'.
var validVersion = regexp.MustCompile(`^[0-9][0-9A-Za-z.+~]*$`)

func build(ctx context.Context, o options) (result, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return result{}, err
	}
	if o.Out == "" {
		o.Out = "dist"
	}
	if o.Release == "" {
		o.Release = "1"
	}
	if o.Epoch.IsZero() {
		if o.Epoch, err = sourceDateEpoch(ctx, root); err != nil {
			return result{}, err
		}
	}
	if o.Version == "" {
		if o.Version, err = gitVersion(ctx, root, o.Epoch); err != nil {
			return result{}, err
		}
	}
	if !validVersion.MatchString(o.Version) {
		return result{}, fmt.Errorf("version %q: use digits, letters, '.', '+' and '~', starting with a digit (no '-': dpkg and rpm read it as the release)", o.Version)
	}

	stage, err := os.MkdirTemp("", "skiff-packaging-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(stage)
	bin := filepath.Join(stage, "skiff")
	if err := goBuild(ctx, root, bin, o.Version); err != nil {
		return result{}, err
	}
	staged, err := stageFiles(ctx, stage, bin, o)
	if err != nil {
		return result{}, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return result{}, err
	}
	res := result{
		Deb:     filepath.Join(o.Out, fmt.Sprintf("%s_%s_amd64.deb", pkgName, o.Version)),
		RPM:     filepath.Join(o.Out, fmt.Sprintf("%s-%s-%s.x86_64.rpm", pkgName, o.Version, o.Release)),
		Version: o.Version,
	}
	// Compressing is most of the time: both packages at once.
	rpmErr := make(chan error, 1)
	go func() { rpmErr <- writePackage(rpm.DefaultRPM, info(o, staged, "rpm"), res.RPM) }()
	debErr := writePackage(deb.Default, info(o, staged, "deb"), res.Deb)
	if debErr != nil {
		debErr = fmt.Errorf("build %s: %w", res.Deb, debErr)
	}
	if err := <-rpmErr; err != nil {
		return result{}, errors.Join(debErr, fmt.Errorf("build %s: %w", res.RPM, err))
	}
	if debErr != nil {
		return result{}, debErr
	}
	return res, nil
}

func moduleRoot(ctx context.Context) (string, error) {
	out, err := run(ctx, "", "go", "list", "-m", "-f", "{{.Dir}}")
	if err != nil {
		return "", fmt.Errorf("find the module: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH, else the last commit's time.
func sourceDateEpoch(ctx context.Context, root string) (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		out, err := run(ctx, root, "git", "log", "-1", "--format=%ct")
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH is not set and the last commit's time is unknown: %w", err)
		}
		s = strings.TrimSpace(out)
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil || sec <= 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q is not a positive number of seconds", s)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// gitVersion is the latest v* tag without its v, else 0.0.0+git<date>.<commit>.
func gitVersion(ctx context.Context, root string, epoch time.Time) (string, error) {
	if out, err := run(ctx, root, "git", "describe", "--tags", "--exact-match", "--match", "v[0-9]*"); err == nil {
		return strings.TrimPrefix(strings.TrimSpace(out), "v"), nil
	}
	out, err := run(ctx, root, "git", "rev-parse", "--short=12", "HEAD")
	if err != nil {
		return "", fmt.Errorf("no --version given and git cannot name the commit: %w", err)
	}
	return fmt.Sprintf("0.0.0+git%s.%s", epoch.Format("20060102"), strings.TrimSpace(out)), nil
}

// goBuild builds the product binary as it ships: static, path-free, stripped,
// version stamped.
func goBuild(ctx context.Context, root, out, version string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath",
		"-ldflags", "-s -w -X main.version="+version, "-o", out, "./cmd/skiff")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, b)
	}
	return nil
}

// stagedFile is one file of the packages, written to the staging folder.
type stagedFile struct {
	src, dst string
	mode     os.FileMode
	kind     string // nfpm content type: "" (file) or files.TypeConfigNoReplace
	packager string // "" for both, "deb" or "rpm"
}

func stageFiles(ctx context.Context, stage, bin string, o options) ([]stagedFile, error) {
	man, err := run(ctx, "", bin, "man")
	if err != nil {
		return nil, fmt.Errorf("render the man page: %w", err)
	}
	copyright, err := copyrightFile(ctx, bin, o.Epoch.Year())
	if err != nil {
		return nil, err
	}
	embedded := func(name string) []byte {
		b, err := packagedFiles.ReadFile("files/" + name)
		if err != nil {
			panic(err) // the files are embedded at build time
		}
		return b
	}
	type gen struct {
		name string
		body []byte
		stagedFile
	}
	gens := []gen{
		{"skiff.service", []byte(systemd.Unit), stagedFile{dst: "/lib/systemd/system/skiff.service", mode: 0o644, packager: "deb"}},
		{"skiff.service", nil, stagedFile{dst: "/usr/lib/systemd/system/skiff.service", mode: 0o644, packager: "rpm"}},
		{"skiff.yaml", embedded("skiff.yaml"), stagedFile{dst: "/etc/skiff/skiff.yaml", mode: 0o644, kind: files.TypeConfigNoReplace}},
		{"sysusers.conf", embedded("sysusers.conf"), stagedFile{dst: "/usr/lib/sysusers.d/skiff.conf", mode: 0o644}},
		{"skiff.1.gz", gzipBytes([]byte(man)), stagedFile{dst: "/usr/share/man/man1/skiff.1.gz", mode: 0o644}},
		{"bash-completion", embedded("bash-completion"), stagedFile{dst: "/usr/share/bash-completion/completions/skiff", mode: 0o644}},
		{"zsh-completion", embedded("zsh-completion"), stagedFile{dst: "/usr/share/zsh/vendor-completions/_skiff", mode: 0o644, packager: "deb"}},
		{"zsh-completion", nil, stagedFile{dst: "/usr/share/zsh/site-functions/_skiff", mode: 0o644, packager: "rpm"}},
		{"copyright", copyright, stagedFile{dst: "/usr/share/doc/skiff/copyright", mode: 0o644}},
		{"changelog.gz", gzipBytes(debianChangelog(o)), stagedFile{dst: "/usr/share/doc/skiff/changelog.gz", mode: 0o644, packager: "deb"}},
		{"lintian-overrides", embedded("lintian-overrides"), stagedFile{dst: "/usr/share/lintian/overrides/skiff", mode: 0o644, packager: "deb"}},
	}
	out := []stagedFile{{src: bin, dst: "/usr/bin/skiff", mode: 0o755}}
	for _, g := range gens {
		g.src = filepath.Join(stage, g.name)
		if g.body != nil {
			if err := os.WriteFile(g.src, g.body, 0o644); err != nil {
				return nil, err
			}
		}
		out = append(out, g.stagedFile)
	}
	for _, s := range []string{"deb/postinst", "deb/prerm", "deb/postrm", "rpm/pre", "rpm/post", "rpm/preun", "rpm/postun"} {
		dst := filepath.Join(stage, strings.ReplaceAll(s, "/", "-"))
		if err := os.WriteFile(dst, embedded(s), 0o755); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// info is the nfpm description of one package format.
func info(o options, staged []stagedFile, packager string) *nfpm.Info {
	stage := filepath.Dir(staged[0].src)
	script := func(name string) string { return filepath.Join(stage, packager+"-"+name) }
	i := &nfpm.Info{
		Name:          pkgName,
		Arch:          "amd64",
		Platform:      "linux",
		Version:       o.Version,
		VersionSchema: "none",
		Section:       "net",
		Priority:      "optional",
		Maintainer:    maintainer,
		Description:   description,
		Vendor:        "Skiff",
		License:       license,
		MTime:         o.Epoch,
	}
	for _, s := range staged {
		if s.packager != "" && s.packager != packager {
			continue
		}
		i.Contents = append(i.Contents, &files.Content{
			Source:      s.src,
			Destination: s.dst,
			Type:        s.kind,
			FileInfo:    &files.ContentFileInfo{Owner: "root", Group: "root", Mode: s.mode, MTime: o.Epoch},
		})
	}
	switch packager {
	case "deb":
		i.Deb.Compression = "xz"
		i.Scripts = nfpm.Scripts{PostInstall: script("postinst"), PreRemove: script("prerm"), PostRemove: script("postrm")}
	case "rpm":
		i.Release = o.Release
		i.RPM.Summary = summary
		i.RPM.Group = "System Environment/Daemons"
		i.RPM.BuildHost = "skiff-packaging" // not the build machine's name: reproducible
		i.RPM.Compression = "xz"
		i.Scripts = nfpm.Scripts{PreInstall: script("pre"), PostInstall: script("post"), PreRemove: script("preun"), PostRemove: script("postun")}
	}
	return nfpm.WithDefaults(i)
}

func writePackage(p nfpm.Packager, i *nfpm.Info, path string) error {
	var buf bytes.Buffer
	if err := p.Package(i, &buf); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// gzipBytes compresses like `gzip -9n`: best compression, no name, no time.
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func run(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return string(out), nil
}

var errNoModules = errors.New("no Go modules listed in the binary")
