package main

// skiff consume --share and skiff group describe of a share group, against a real
// broker.

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareConsumeAndDescribe: a share group member prints the records that do
// not match --reject-if and rejects the others; group describe then shows the
// share group with its start offset past every record.
func TestShareConsumeAndDescribe(t *testing.T) {
	b := groupBrokers(t)
	topic := uniqueTopic("share")
	group := topic + "-g"
	skiffOK(t, nil, "topic", "create", topic, "-p", "1", "-b", b)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: group,
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("set share.auto.offset.reset: %v %v", err, kerr.ErrorForCode(resp.Resources[0].ErrorCode))
	}
	for i := range 10 {
		v := "good-" + strconv.Itoa(i)
		if i%5 == 0 {
			v = "bad-" + strconv.Itoa(i)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	out := lines(skiffOK(t, nil, "consume", "-t", topic, "--share", group, "--reject-if", "^bad", "-n", "8", "-b", b))
	if len(out) != 8 {
		t.Fatalf("printed %d records, want the 8 good ones: %q", len(out), out)
	}
	for _, l := range out {
		if !regexp.MustCompile(`^good-\d$`).MatchString(l) {
			t.Errorf("printed %q", l)
		}
	}
	desc := skiffOK(t, nil, "group", "describe", group, "-b", b)
	mustContain(t, "describe", desc, "group:    "+group, "type:     share", "START-OFFSET")
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(topic) + ` +0 +10 +0$`).MatchString(desc) {
		t.Errorf("describe does not show start offset 10 and lag 0:\n%s", desc)
	}
	if st := skiffOK(t, nil, "group", "list", "--state", "-b", b); !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(group) + ` +Empty +share +0$`).MatchString(st) {
		t.Errorf("group list --state does not show the share group:\n%s", st)
	}
	mustContain(t, "--reject-if without --share", skiffErr(t, nil, "consume", "-t", topic, "--reject-if", "x", "-b", b), "--reject-if needs --share")
	mustContain(t, "--share with --group", skiffErr(t, nil, "consume", "-t", topic, "--share", group, "-g", "x", "-b", b), "--group cannot be used with --share")
}

// TestShareGroupResetOffsetsAndDelete: group reset-offsets of a share group moves
// its share-partitions' start offsets (AlterShareGroupOffsets), with the old and
// new ones printed, and the next member consumes from there; group delete
// deletes the share group.
func TestShareGroupResetOffsetsAndDelete(t *testing.T) {
	b := groupBrokers(t)
	topic := uniqueTopic("share-reset")
	group := topic + "-g"
	skiffOK(t, nil, "topic", "create", topic, "-p", "1", "-b", b)
	skiffOK(t, nil, "group", "alter-config", group, "--set", "share.auto.offset.reset=earliest", "-b", b)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if out := lines(skiffOK(t, nil, "consume", "-t", topic, "--share", group, "-n", "3", "-b", b)); len(out) != 3 || out[0] != "v0" {
		t.Fatalf("first member printed %q, want v0..v2", out)
	}
	row := func(old, new string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(topic) + ` +0 +` + old + ` +` + new + `$`)
	}
	out := skiffOK(t, nil, "group", "reset-offsets", group, "-t", topic, "--to-offset", "7", "-b", b)
	if !row("3", "7").MatchString(out) || !strings.Contains(out, "reset 1 partition of "+topic) {
		t.Errorf("reset-offsets printed:\n%s\nwant %s 0 3 7", out, topic)
	}
	desc := skiffOK(t, nil, "group", "describe", group, "-b", b)
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(topic) + ` +0 +7 +3$`).MatchString(desc) {
		t.Errorf("describe does not show start offset 7 and lag 3:\n%s", desc)
	}
	if out := lines(skiffOK(t, nil, "consume", "-t", topic, "--share", group, "-n", "3", "-b", b)); strings.Join(out, " ") != "v7 v8 v9" {
		t.Errorf("after the reset a member printed %q, want v7 v8 v9", out)
	}
	if out := skiffOK(t, nil, "group", "reset-offsets", group, "-t", topic, "--to-earliest", "--dry-run", "-b", b); !row("10", "0").MatchString(out) {
		t.Errorf("dry run printed:\n%s\nwant %s 0 10 0", out, topic)
	}
	if desc := skiffOK(t, nil, "group", "describe", group, "-b", b); !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(topic) + ` +0 +10 +0$`).MatchString(desc) {
		t.Errorf("a dry run changed the start offset:\n%s", desc)
	}
	mustContain(t, "delete", skiffOK(t, nil, "group", "delete", group, "-b", b), "deleted group "+group)
	mustContain(t, "describe after delete", skiffErr(t, nil, "group", "describe", group, "-b", b), "does not exist")
}
