#!/usr/bin/env bash
# Installs what the tests need on a Debian machine when it is missing (run as root,
# as CI does): kcat (librdkafka's command-line client). Go modules come from the
# module proxy through the go command itself.
set -euo pipefail
missing=()
command -v kcat >/dev/null || missing+=(kcat)
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "test-deps: need ${missing[*]}; run as root or install them: apt-get install ${missing[*]}" >&2
		exit 1
	fi
	echo "test-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
fi
go mod download
