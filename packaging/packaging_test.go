package main

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Packages built once for all tests of this package, with a fixed
// SOURCE_DATE_EPOCH: two versions for the upgrade test and a second build of the
// first for the reproducibility test.
const (
	oldVersion = "0.1.0"
	newVersion = "0.1.1"
)

var testEpoch = time.Unix(1767225600, 0).UTC() // 2026-01-01

var (
	buildOnce sync.Once
	builds    struct {
		old, new, again result
		err             error
	}
	buildDir string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "skiff-packaging-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testPackages builds the test packages once (concurrently) and returns them.
func testPackages(t *testing.T) (old, new, again result) {
	t.Helper()
	buildOnce.Do(func() {
		start := time.Now()
		opts := func(version, dir string) options {
			return options{Version: version, Out: filepath.Join(buildDir, dir), Epoch: testEpoch}
		}
		// The first build compiles; the other two find the compiled packages in
		// Go's build cache and link at once. Building the version built twice last
		// and concurrently keeps both builds of it on the same sources even where
		// others edit the working tree meanwhile.
		if builds.new, builds.err = build(context.Background(), opts(newVersion, "a")); builds.err != nil {
			return
		}
		var wg sync.WaitGroup
		var oldErr, againErr error
		wg.Add(2)
		go func() { defer wg.Done(); builds.old, oldErr = build(context.Background(), opts(oldVersion, "a")) }()
		go func() { defer wg.Done(); builds.again, againErr = build(context.Background(), opts(oldVersion, "b")) }()
		wg.Wait()
		builds.err = errors.Join(oldErr, againErr)
		t.Logf("built the test packages in %s", time.Since(start).Round(time.Second))
	})
	if builds.err != nil {
		t.Fatalf("build packages: %v", builds.err)
	}
	return builds.old, builds.new, builds.again
}

func needTool(t *testing.T, tool string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		msg := tool + " is not installed (scripts/test-deps.sh installs it, as root)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

func command(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestFileNames(t *testing.T) {
	old, _, _ := testPackages(t)
	if got, want := filepath.Base(old.Deb), "skiff_0.1.0_amd64.deb"; got != want {
		t.Errorf("deb is %s, want %s", got, want)
	}
	if got, want := filepath.Base(old.RPM), "skiff-0.1.0-1.x86_64.rpm"; got != want {
		t.Errorf("rpm is %s, want %s", got, want)
	}
	for _, p := range []string{old.Deb, old.RPM} {
		if fi, err := os.Stat(p); err == nil {
			t.Logf("%s: %.1f MB", filepath.Base(p), float64(fi.Size())/1e6)
		}
	}
}

// Two builds of the same version with the same SOURCE_DATE_EPOCH are identical.
func TestReproducible(t *testing.T) {
	old, _, again := testPackages(t)
	for _, pair := range [][2]string{{old.Deb, again.Deb}, {old.RPM, again.RPM}} {
		a, err := os.ReadFile(pair[0])
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(pair[1])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds with SOURCE_DATE_EPOCH=%d", filepath.Base(pair[0]), testEpoch.Unix())
		}
	}
}

func TestBadVersion(t *testing.T) {
	for _, v := range []string{"1.0-rc1", "v1.0", "dev", "1.0 beta"} {
		_, err := build(context.Background(), options{Version: v, Out: t.TempDir(), Epoch: testEpoch})
		if err == nil || !strings.Contains(err.Error(), "version") {
			t.Errorf("version %q: got %v, want a refusal naming the version", v, err)
		}
	}
}

// The .deb holds what the issue lists, with the configuration as a conffile and
// the maintainer scripts, and its binary reports the packaged version.
func TestDebContents(t *testing.T) {
	needTool(t, "dpkg-deb")
	old, _, _ := testPackages(t)
	listing := command(t, "dpkg-deb", "--contents", old.Deb)
	for _, want := range []string{
		"-rwxr-xr-x root/root", "./usr/bin/skiff",
		"./lib/systemd/system/skiff.service",
		"./etc/skiff/skiff.yaml",
		"./usr/lib/sysusers.d/skiff.conf",
		"./usr/share/man/man1/skiff.1.gz",
		"./usr/share/bash-completion/completions/skiff",
		"./usr/share/zsh/vendor-completions/_skiff",
		"./usr/share/doc/skiff/copyright",
		"./usr/share/doc/skiff/changelog.gz",
	} {
		if !strings.Contains(listing, want) {
			t.Errorf("dpkg-deb --contents lacks %q:\n%s", want, listing)
		}
	}
	if got := command(t, "dpkg-deb", "--field", old.Deb, "Version"); strings.TrimSpace(got) != oldVersion {
		t.Errorf("Version: %q, want %s", got, oldVersion)
	}
	ctrl := t.TempDir()
	command(t, "dpkg-deb", "--control", old.Deb, ctrl)
	if b, _ := os.ReadFile(filepath.Join(ctrl, "conffiles")); string(b) != "/etc/skiff/skiff.yaml\n" {
		t.Errorf("conffiles: %q, want /etc/skiff/skiff.yaml", b)
	}
	for _, s := range []string{"postinst", "prerm", "postrm"} {
		if fi, err := os.Stat(filepath.Join(ctrl, s)); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("maintainer script %s: %v", s, err)
		}
	}
	root := t.TempDir()
	command(t, "dpkg-deb", "--extract", old.Deb, root)
	if got := command(t, filepath.Join(root, "usr/bin/skiff"), "version"); strings.TrimSpace(got) != "skiff "+oldVersion {
		t.Errorf("skiff version prints %q, want skiff %s", got, oldVersion)
	}
	bin := filepath.Join(root, "usr/bin/skiff")
	if fi, err := os.Stat(bin); err != nil {
		t.Error(err)
	} else if !fi.ModTime().Equal(testEpoch) {
		t.Errorf("/usr/bin/skiff's time is %s, not SOURCE_DATE_EPOCH %s", fi.ModTime(), testEpoch)
	}
	// Static: no program interpreter, so no libc needed.
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("/usr/bin/skiff is dynamically linked (program header %v)", p.Type)
		}
	}
	// Skiff's own code is under the Apache License 2.0, which Debian ships.
	copyright, _ := os.ReadFile(filepath.Join(root, "usr/share/doc/skiff/copyright"))
	for _, want := range []string{"\nFiles: *\nCopyright: ", "\nLicense: Apache-2.0\n", `"/usr/share/common-licenses/Apache-2.0"`} {
		if !strings.Contains(string(copyright), want) {
			t.Errorf("the copyright file lacks %q:\n%s", want, copyright)
		}
	}
	unit, _ := os.ReadFile(filepath.Join(root, "lib/systemd/system/skiff.service"))
	if !strings.Contains(string(unit), "ExecStart=/usr/bin/skiff serve --config /etc/skiff/skiff.yaml\n") {
		t.Errorf("the unit does not start skiff with the packaged configuration:\n%s", unit)
	}
}

// lintian, with the overrides the package ships (the static binary), finds no
// error and no warning.
func TestLintian(t *testing.T) {
	needTool(t, "lintian")
	old, _, _ := testPackages(t)
	cmd := exec.Command("lintian", "--fail-on", "error,warning", "--tag-display-limit", "0", old.Deb)
	out, err := cmd.CombinedOutput()
	// lintian says "running with root privileges is not recommended!" as root.
	var tags []string
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" && !strings.Contains(l, "running with root privileges") {
			tags = append(tags, l)
		}
	}
	if err != nil || len(tags) > 0 {
		t.Errorf("lintian --fail-on error,warning: %v\n%s", err, strings.Join(tags, "\n"))
	}
}

// rpm reads the .rpm's metadata, files, configuration files and scriptlets.
func TestRPMMetadata(t *testing.T) {
	needTool(t, "rpm")
	old, _, _ := testPackages(t)
	info := command(t, "rpm", "-qip", old.RPM)
	for _, want := range []string{
		"Name        : skiff", "Version     : 0.1.0", "Release     : 1", "Architecture: x86_64",
		"Summary     : Kafka-compatible message engine in one static binary",
		"Build Host  : skiff-packaging",
		"License     : Apache-2.0",
	} {
		if !strings.Contains(info, want) {
			t.Errorf("rpm -qip lacks %q:\n%s", want, info)
		}
	}
	list := command(t, "rpm", "-qlp", old.RPM)
	wantFiles := []string{
		"/etc/skiff/skiff.yaml",
		"/usr/bin/skiff",
		"/usr/lib/systemd/system/skiff.service",
		"/usr/lib/sysusers.d/skiff.conf",
		"/usr/share/bash-completion/completions/skiff",
		"/usr/share/doc/skiff/copyright",
		"/usr/share/man/man1/skiff.1.gz",
		"/usr/share/zsh/site-functions/_skiff",
	}
	if got := strings.Fields(list); strings.Join(got, "\n") != strings.Join(wantFiles, "\n") {
		t.Errorf("rpm -qlp:\n%s\nwant:\n%s", list, strings.Join(wantFiles, "\n"))
	}
	if got := strings.TrimSpace(command(t, "rpm", "-qcp", old.RPM)); got != "/etc/skiff/skiff.yaml" {
		t.Errorf("rpm -qcp (configuration files): %q", got)
	}
	scripts := command(t, "rpm", "-qp", "--scripts", old.RPM)
	for _, want := range []string{"preinstall scriptlet", "postinstall scriptlet", "preuninstall scriptlet", "postuninstall scriptlet", "systemd-sysusers", "try-restart skiff.service"} {
		if !strings.Contains(scripts, want) {
			t.Errorf("rpm --scripts lacks %q:\n%s", want, scripts)
		}
	}
}

// systemd-analyze verify prints nothing for the packaged unit. It exits 0 even on
// errors, so any output fails. It needs the unit's binary and man page (from the
// .deb) and systemd's own units (from the host) under one root.
func TestUnitVerify(t *testing.T) {
	needTool(t, "systemd-analyze")
	needTool(t, "man")
	if _, err := os.Stat("/lib/systemd/system/sysinit.target"); err != nil {
		t.Skip("systemd's units are not installed on this machine")
	}
	old, _, _ := testPackages(t)
	root := t.TempDir()
	command(t, "dpkg-deb", "--extract", old.Deb, root)
	command(t, "cp", "-a", "--no-clobber", "/lib/systemd/system/.", filepath.Join(root, "lib/systemd/system/"))

	verify := func(unit string) string {
		cmd := exec.Command("systemd-analyze", "verify", "--root="+root, unit)
		cmd.Env = append(os.Environ(), "MANPATH="+filepath.Join(root, "usr/share/man"))
		out, _ := cmd.CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	if out := verify("/lib/systemd/system/skiff.service"); out != "" {
		t.Errorf("systemd-analyze verify skiff.service:\n%s", out)
	}
	// The check sees errors: the same unit with an unknown key is reported.
	// Skiff's own code is under the Apache License 2.0, which Debian ships.
	copyright, _ := os.ReadFile(filepath.Join(root, "usr/share/doc/skiff/copyright"))
	for _, want := range []string{"\nFiles: *\nCopyright: ", "\nLicense: Apache-2.0\n", `"/usr/share/common-licenses/Apache-2.0"`} {
		if !strings.Contains(string(copyright), want) {
			t.Errorf("the copyright file lacks %q:\n%s", want, copyright)
		}
	}
	unit, _ := os.ReadFile(filepath.Join(root, "lib/systemd/system/skiff.service"))
	broken := strings.Replace(string(unit), "[Service]\n", "[Service]\nNotAKey=1\n", 1)
	writeFile(t, filepath.Join(root, "lib/systemd/system/skiff-broken.service"), broken)
	if out := verify("/lib/systemd/system/skiff-broken.service"); !strings.Contains(out, "NotAKey") {
		t.Errorf("systemd-analyze verify did not report an unknown key: %q", out)
	}
}
