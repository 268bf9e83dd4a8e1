package main

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestConfigCommandsE2E: skiff topic alter-config and delete-records, skiff config
// alter and describe against a real broker; flags go before or after the topic
// name.
func TestConfigCommandsE2E(t *testing.T) {
	b := e2eBrokers(t)
	topic := uniqueTopic("alter")
	skiffOK(t, nil, "topic", "create", topic, "-p", "1", "-b", b)
	out := skiffOK(t, nil, "topic", "alter-config", "--set", "retention.ms=3600000", topic, "--set", "segment.ms=7200000",
		"--delete", "max.message.bytes", "-b", b)
	if out != "altered configs of topic "+topic+"\n" {
		t.Errorf("alter-config printed %q", out)
	}
	desc := skiffOK(t, nil, "topic", "describe", topic, "-b", b)
	for _, row := range []string{`retention\.ms +3600000 +topic`, `segment\.ms +7200000 +topic`, `max\.message\.bytes +1048588 +default`} {
		if !regexp.MustCompile(`(?m)^` + row + `$`).MatchString(desc) {
			t.Errorf("describe lacks %q:\n%s", row, desc)
		}
	}
	skiffOK(t, nil, "topic", "alter-config", topic, "--delete", "segment.ms", "-b", b)
	if desc := skiffOK(t, nil, "topic", "describe", topic, "-b", b); !regexp.MustCompile(`(?m)^segment\.ms +604800000 +default$`).MatchString(desc) {
		t.Errorf("segment.ms after --delete:\n%s", desc)
	}
	mustContain(t, "bad value", skiffErr(t, nil, "topic", "alter-config", topic, "--set", "retention.ms=soon", "-b", b),
		"INVALID_CONFIG", "Invalid value soon for configuration retention.ms")
	mustContain(t, "nothing to change", skiffErr(t, nil, "topic", "alter-config", topic, "-b", b), "--set KEY=VALUE or --delete KEY")
	mustContain(t, "set and delete", skiffErr(t, nil, "topic", "alter-config", topic, "--set", "a=1", "--delete", "a", "-b", b), "both --set and --delete")

	produceNumbered(t, b, topic, 1, 10)
	if out := skiffOK(t, nil, "topic", "delete-records", topic, "--partition", "0", "--before", "4", "-b", b); out != "deleted records of "+topic+"/0; low watermark 4\n" {
		t.Errorf("delete-records printed %q", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	starts, err := newTestAdmin(t, b).ListStartOffsets(ctx, topic)
	if o, ok := starts.Lookup(topic, 0); err != nil || !ok || o.Offset != 4 {
		t.Errorf("earliest offset after delete-records: %+v %v", o, err)
	}
	mustContain(t, "delete-records past the end", skiffErr(t, nil, "topic", "delete-records", topic, "--partition", "0", "--before", "99", "-b", b),
		"OFFSET_OUT_OF_RANGE")
	mustContain(t, "delete-records without a partition", skiffErr(t, nil, "topic", "delete-records", topic, "--before", "1", "-b", b), "--partition P")

	md, err := newTestAdmin(t, b).BrokerMetadata(ctx)
	if err != nil || len(md.Brokers) == 0 {
		t.Fatalf("metadata: %v", err)
	}
	id := strconv.Itoa(int(md.Brokers[0].NodeID))
	out = skiffOK(t, nil, "config", "describe", "--broker", id, "-b", b)
	mustContain(t, "config describe", out, "CONFIG", "SOURCE", "DYNAMIC")
	if !regexp.MustCompile(`(?m)^num\.partitions +1 +default +yes$`).MatchString(out) {
		t.Errorf("config describe: no default num.partitions row:\n%s", out)
	}
	if out := skiffOK(t, nil, "config", "alter", "--broker", id, "--set", "num.partitions=2", "-b", b); out != "altered configs of broker "+id+"\n" {
		t.Errorf("config alter printed %q", out)
	}
	if out := skiffOK(t, nil, "config", "describe", "--broker", id, "-b", b); !regexp.MustCompile(`(?m)^num\.partitions +2 +broker +yes$`).MatchString(out) {
		t.Errorf("num.partitions after config alter:\n%s", out)
	}
	skiffOK(t, nil, "config", "alter", "--all", "--set", "log.retention.ms=86400000", "-b", b)
	skiffOK(t, nil, "config", "alter", "--broker", id, "--delete", "num.partitions", "-b", b)
	out = skiffOK(t, nil, "config", "describe", "-b", b)
	for _, row := range []string{`num\.partitions +1 +default +yes`, `log\.retention\.ms +86400000 +cluster +yes`} {
		if !regexp.MustCompile(`(?m)^` + row + `$`).MatchString(out) {
			t.Errorf("config describe lacks %q:\n%s", row, out)
		}
	}
	skiffOK(t, nil, "config", "alter", "--all", "--delete", "log.retention.ms", "-b", b)
	mustContain(t, "read-only config", skiffErr(t, nil, "config", "alter", "--all", "--set", "socket.request.max.bytes=1000", "-b", b),
		"Cannot update these configs dynamically")
	mustContain(t, "neither --broker nor --all", skiffErr(t, nil, "config", "alter", "--set", "num.partitions=2", "-b", b), "--broker ID, or --all")
}
