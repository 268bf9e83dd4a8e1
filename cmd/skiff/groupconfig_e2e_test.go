package main

// skiff group alter-config and describe-config against a real broker.

import (
	"regexp"
	"testing"
)

// TestGroupConfigCommands: a group's share.* and consumer.* configs are set,
// shown with source group (the others with the broker's defaults), refused with
// Kafka's INVALID_CONFIG and the broker's reason, and deleted back to defaults.
func TestGroupConfigCommands(t *testing.T) {
	b := groupBrokers(t)
	group := uniqueTopic("groupcfg")
	row := func(out, name, value, source string) bool {
		return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` +` + regexp.QuoteMeta(value) + ` +` + source + `$`).MatchString(out)
	}
	out := skiffOK(t, nil, "group", "describe-config", group, "-b", b)
	for _, want := range [][3]string{
		{"share.auto.offset.reset", "latest", "default"},
		{"share.delivery.count.limit", "5", "default"},
		{"share.record.lock.duration.ms", "30000", "default"},
		{"consumer.session.timeout.ms", "45000", "default"},
		{"share.session.timeout.ms", "45000", "default"},
		{"share.heartbeat.interval.ms", "5000", "default"},
	} {
		if !row(out, want[0], want[1], want[2]) {
			t.Errorf("describe-config of a new group lacks %v:\n%s", want, out)
		}
	}

	mustContain(t, "alter-config", skiffOK(t, nil, "group", "alter-config", group, "-b", b,
		"--set", "share.delivery.count.limit=3", "--set", "share.auto.offset.reset=earliest", "--set", "consumer.session.timeout.ms=50000",
		"--set", "share.session.timeout.ms=50000", "--set", "share.heartbeat.interval.ms=6000"),
		"altered configs of group "+group)
	out = skiffOK(t, nil, "group", "describe-config", group, "-b", b)
	for _, want := range [][3]string{
		{"share.auto.offset.reset", "earliest", "group"},
		{"share.delivery.count.limit", "3", "group"},
		{"consumer.session.timeout.ms", "50000", "group"},
		{"share.record.lock.duration.ms", "30000", "default"},
		{"share.session.timeout.ms", "50000", "group"},
		{"share.heartbeat.interval.ms", "6000", "group"},
	} {
		if !row(out, want[0], want[1], want[2]) {
			t.Errorf("describe-config after alter-config lacks %v:\n%s", want, out)
		}
	}

	for _, bad := range []struct{ set, says string }{
		{"share.auto.offset.reset=sometimes", "must be latest or earliest"},
		{"consumer.session.timeout.ms=1000", "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{"no.such.config=1", "Unknown group config name: no.such.config"},
		{"share.session.timeout.ms=1000", "share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"},
	} {
		msg := skiffErr(t, nil, "group", "alter-config", group, "-b", b, "--set", bad.set)
		mustContain(t, "alter-config --set "+bad.set, msg, "INVALID_CONFIG", bad.says)
	}

	skiffOK(t, nil, "group", "alter-config", group, "-b", b, "--delete", "share.delivery.count.limit", "--delete", "consumer.session.timeout.ms")
	out = skiffOK(t, nil, "group", "describe-config", group, "-b", b)
	for _, want := range [][3]string{
		{"share.auto.offset.reset", "earliest", "group"},
		{"share.delivery.count.limit", "5", "default"},
		{"consumer.session.timeout.ms", "45000", "default"},
	} {
		if !row(out, want[0], want[1], want[2]) {
			t.Errorf("describe-config after --delete lacks %v:\n%s", want, out)
		}
	}
	mustContain(t, "alter-config without changes", skiffErr(t, nil, "group", "alter-config", group, "-b", b), "nothing to change")
}
