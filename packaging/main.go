// Command packaging builds Skiff's Debian and RPM packages with nfpm used as a
// library:
//
//	go run ./packaging [--version V] [--out dist]
//
// writes dist/skiff_<V>_amd64.deb and dist/skiff-<V>-1.x86_64.rpm (`make packages`).
// Both hold /usr/bin/skiff (CGO_ENABLED=0, -trimpath, version stamped), the
// skiff.service unit (text from package systemd), /etc/skiff/skiff.yaml as a
// configuration file that upgrades keep, the man page skiff(1) rendered by the
// binary itself, bash and zsh completions, the sysusers.d entry of the skiff user,
// the copyright file and a Debian changelog; maintainer scripts create the user and
// /var/lib/skiff, enable the unit and clean up (see files/deb and files/rpm, and
// docs/packaging.md).
//
// Builds are reproducible: every timestamp is SOURCE_DATE_EPOCH, which defaults to
// the time of the last commit. The version defaults to the latest v* tag, else
// 0.0.0+git<date>.<commit>.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	var o options
	flag.StringVar(&o.Version, "version", "", "package version (default: latest v* tag without the v, else 0.0.0+git<date>.<commit>)")
	flag.StringVar(&o.Out, "out", "dist", "folder the packages are written to")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "packaging: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := build(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "packaging: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(res.Deb)
	fmt.Println(res.RPM)
}
