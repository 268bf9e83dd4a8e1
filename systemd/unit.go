// Package systemd is Skiff's side of systemd: the text of the skiff.service unit
// that the packages install, and the sd_notify messages `skiff serve` sends to the
// service manager (READY=1, STATUS=, WATCHDOG=1, STOPPING=1) over $NOTIFY_SOCKET,
// without cgo, through github.com/coreos/go-systemd/v22/daemon.
//
// It imports no other Skiff package: the node's health check comes in as a func.
package systemd

// UnitName is the name the unit is installed under.
const UnitName = "skiff.service"

// Unit is the text of skiff.service, installed as /lib/systemd/system/skiff.service.
//
//   - Type=notify: `systemctl start skiff` returns once skiff sent READY=1, which it
//     does only when the node serves (listeners bound, etcd member ready, storage open,
//     broker registered).
//   - WatchdogSec=: skiff sends WATCHDOG=1 only while its readiness check passes (the
//     /readyz check); a hung or unhealthy process is killed with SIGABRT (a Go stack
//     dump lands in the journal) and restarted by Restart=on-failure.
//   - The settings come from /etc/skiff/skiff.yaml, whose data-dir is /var/lib/skiff:
//     StateDirectory= creates it owned by skiff (0750) and keeps it writable under
//     ProtectSystem=strict. A data-dir elsewhere needs ReadWritePaths= in a drop-in
//     (`systemctl edit skiff`). SKIFF_* variables in a drop-in (Environment=)
//     override the file.
//   - TimeoutStopSec= leaves room for shutdown-timeout (its default) plus closing
//     storage and the etcd member.
const Unit = `[Unit]
Description=Skiff, a Kafka-compatible message engine
Documentation=man:skiff(1)
After=network-online.target
Wants=network-online.target

[Service]
Type=notify
NotifyAccess=main
ExecStart=/usr/bin/skiff serve --config /etc/skiff/skiff.yaml
User=skiff
Group=skiff
StateDirectory=skiff
StateDirectoryMode=0750
WorkingDirectory=/var/lib/skiff
WatchdogSec=20s
Restart=on-failure
RestartSec=2s
TimeoutStartSec=90s
TimeoutStopSec=60s
LimitNOFILE=1048576

# Hardening: no privileges at all, a read-only system except the data directory.
NoNewPrivileges=yes
CapabilityBoundingSet=
AmbientCapabilities=
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictSUIDSGID=yes
RestrictRealtime=yes
RestrictNamespaces=yes
LockPersonality=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK
SystemCallArchitectures=native
UMask=0027

[Install]
WantedBy=multi-user.target
`
