#!/usr/bin/env bash
# Installs what the tests need on a Debian machine when it is missing (run as root,
# as CI does): kcat (librdkafka's command-line client), kafka-python (python3-kafka,
# for Debian's /usr/bin/python3: e2e/security_test.go, e2e/python_admin_test.go)
# and librdkafka for Debian's Python (python3-confluent-kafka: e2e's freeze tests;
# the python3 on PATH may be another installation); chromium, headless, for the
# console's browser tests (console/, driven with chromedp); for the package tests
# (packaging/) debootstrap and systemd-nspawn (a booted Debian in a container),
# lintian, rpm, and man (systemd-analyze verify checks the unit's man page). Go
# modules come from the module proxy through the go command itself.
set -euo pipefail
missing=()
command -v kcat >/dev/null || missing+=(kcat)
[ -d /usr/lib/python3/dist-packages/kafka ] || missing+=(python3-kafka)
/usr/bin/python3 -c 'import confluent_kafka' 2>/dev/null || missing+=(python3-confluent-kafka)
command -v chromium >/dev/null || missing+=(chromium)
# The package tests skip without these when not run as root (they need root anyway).
pkgtools=()
command -v debootstrap >/dev/null || pkgtools+=(debootstrap)
command -v systemd-nspawn >/dev/null || pkgtools+=(systemd-container)
command -v systemd-analyze >/dev/null || pkgtools+=(systemd)
command -v lintian >/dev/null || pkgtools+=(lintian)
command -v rpm >/dev/null || pkgtools+=(rpm)
command -v man >/dev/null || pkgtools+=(man-db)
if [ "$(id -u)" -ne 0 ]; then
	if [ ${#pkgtools[@]} -gt 0 ]; then
		echo "test-deps: the package tests will skip: not root, and ${pkgtools[*]} missing" >&2
	fi
	if [ ${#missing[@]} -gt 0 ]; then
		echo "test-deps: need ${missing[*]}; run as root or install them: apt-get install ${missing[*]}" >&2
		exit 1
	fi
else
	missing+=("${pkgtools[@]}")
fi
if [ ${#missing[@]} -gt 0 ]; then
	echo "test-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
fi
go mod download
