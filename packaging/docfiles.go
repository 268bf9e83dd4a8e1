package main

import (
	"context"
	"fmt"
	"strings"
)

// copyrightFile is /usr/share/doc/skiff/copyright in the machine-readable format,
// listing the Go modules linked into the binary (read from the binary itself).
// year is the copyright year: that of SOURCE_DATE_EPOCH, so the file is reproducible.
func copyrightFile(ctx context.Context, bin string, year int) ([]byte, error) {
	out, err := run(ctx, "", "go", "version", "-m", bin)
	if err != nil {
		return nil, fmt.Errorf("list the modules in the binary: %w", err)
	}
	var mods []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "dep" {
			mods = append(mods, " "+f[1]+" "+f[2])
		}
	}
	if len(mods) == 0 {
		return nil, errNoModules
	}
	var b strings.Builder
	b.WriteString(`Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: skiff
Upstream-Contact: ` + maintainer + `
Comment:
 /usr/bin/skiff is a static Go binary. Besides Skiff's own code it contains
 the Go standard library (BSD-3-Clause) and these Go modules, each under the
 license published with it:
`)
	b.WriteString(strings.Join(mods, "\n"))
	b.WriteString(`

Files: *
Copyright: ` + fmt.Sprint(year) + ` Skiff maintainers
License: ` + license + `

License: ` + license + `
 Licensed under the Apache License, Version 2.0 (the "License");
 you may not use this file except in compliance with the License.
 You may obtain a copy of the License at
 .
 https://www.apache.org/licenses/LICENSE-2.0
 .
 Unless required by applicable law or agreed to in writing, software
 distributed under the License is distributed on an "AS IS" BASIS,
 WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 See the License for the specific language governing permissions and
 limitations under the License.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0
 can be found in "/usr/share/common-licenses/Apache-2.0".
`)
	return []byte(b.String()), nil
}

// debianChangelog is the package's Debian changelog (debian/changelog format),
// installed as /usr/share/doc/skiff/changelog.gz (a native package). Its entry
// carries the version being built and SOURCE_DATE_EPOCH as its date; the items
// list what the packaging provides.
func debianChangelog(o options) []byte {
	return []byte(fmt.Sprintf(`skiff (%s) unstable; urgency=medium

  * Package Skiff as .deb and .rpm, built with nfpm from go run ./packaging.
  * skiff.service: Type=notify with READY=1 once the node serves, STATUS=
    lines, a watchdog fed only while the readiness check passes, sandboxing
    (ProtectSystem=strict, empty capability set) and data in /var/lib/skiff.
  * /etc/skiff/skiff.yaml documents every setting of skiff serve with its
    default; upgrades keep local edits.
  * A man page rendered from the commands, bash and zsh completions.

 -- %s  %s
`, o.Version, maintainer, o.Epoch.UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700")))
}
