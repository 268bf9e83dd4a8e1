package console_test

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

	"skiff/internal/testnode"
)

// TestConsoleShareGroup: a share group is listed on /groups as type share with
// its member, and its page shows the member and its share-partition: start and
// end offsets, in-flight and acquired counts while the member holds records it
// has not acknowledged, and the lag behind the log end.
func TestConsoleShareGroup(t *testing.T) {
	n := testnode.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const topic, group, records = "jobs", "workers", 10
	admin := newClient(t, n.Addr)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(ctx, admin); err != nil || kerr.ErrorForCode(resp.Topics[0].ErrorCode) != nil {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
	alter.Resources = append(alter.Resources, res)
	if resp, err := alter.RequestWith(ctx, admin); err != nil || kerr.ErrorForCode(resp.Resources[0].ErrorCode) != nil {
		t.Fatalf("share.auto.offset.reset of %s: %v %+v", group, err, resp)
	}
	produce(t, ctx, admin, topic, records)

	// The member polls once and keeps what it got unacknowledged (the lock is
	// 30 s): those records stay acquired.
	member := newClient(t, n.Addr, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID("share-worker"))
	held := 0
	for held == 0 {
		fs := member.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("the share member got no record")
		}
		held = fs.NumRecords()
	}

	base := "http://" + n.HTTPAddr
	web := newBrowserlessClient(t)
	row := regexp.MustCompile(`(?s)<tr data-group="` + group + `">.*?</tr>`).FindString(get(t, web, base+"/groups").body)
	if !strings.Contains(row, "<td>share</td>") || !strings.Contains(row, `<td class="n">1</td>`) {
		t.Errorf("the groups page's row of %s does not say share with 1 member: %q", group, row)
	}
	body := get(t, web, base+"/groups/"+group).body
	if !strings.Contains(body, "share-worker") || !strings.Contains(body, `[0]`) {
		t.Errorf("the page of %s lacks its member share-worker assigned partition 0:\n%s", group, body)
	}
	share := regexp.MustCompile(`(?s)<tr data-tp="` + topic + `/0">.*?</tr>`).FindString(body)
	figure := func(name string) string {
		m := regexp.MustCompile(`data-figure="` + name + `">([^<]*)<`).FindStringSubmatch(share)
		if m == nil {
			return ""
		}
		return m[1]
	}
	want := map[string]string{"spso": "0", "speo": itoa(held), "in-flight": itoa(held), "acquired": itoa(held), "end": itoa(records), "lag": itoa(records)}
	for name, v := range want {
		if got := figure(name); got != v {
			t.Errorf("share-partition %s = %q, want %s (the member holds %d of %d records); row %q", name, got, v, held, records, share)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
