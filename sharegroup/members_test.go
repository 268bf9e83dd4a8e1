package sharegroup

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupSessionAndHeartbeatConfigs: a group's share.heartbeat.interval.ms is
// what its heartbeats answer and its share.session.timeout.ms is when a silent
// member leaves; a group without them has the broker's; values outside the
// broker's group.share.min/max bounds, or a session not above the interval, are
// refused in Kafka's words.
func TestGroupSessionAndHeartbeatConfigs(t *testing.T) {
	now := time.Unix(1000, 0)
	configs := map[string]map[string]string{
		"fast": {ConfigSessionTimeout: "50000", ConfigHeartbeatInterval: "6000"},
	}
	left := make(chan string, 4)
	cfg := Config{
		Clock:        func() time.Time { return now },
		GroupConfigs: func(g string) map[string]string { return configs[g] },
		// A broker whose own session timeout is longer than the group's.
		SessionTimeout: 55 * time.Second,
	}
	c := NewCoordinator(cfg, func(string) (TopicInfo, bool) { return TopicInfo{}, false }, func(g, m string) { left <- g + "/" + m })
	join := func(group, member string) *kmsg.ShareGroupHeartbeatResponse {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.SubscribedTopicNames = group, member, []string{"t"}
		resp := c.Heartbeat(context.Background(), req, Client{ID: "c", Host: "h"})
		if resp.ErrorCode != 0 {
			t.Fatalf("join %s: %v", group, kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp
	}
	if got := join("fast", "m1").HeartbeatIntervalMillis; got != 6000 {
		t.Errorf("group with share.heartbeat.interval.ms 6000 told %d ms", got)
	}
	if got := join("plain", "m2").HeartbeatIntervalMillis; got != int32(DefaultHeartbeatInterval.Milliseconds()) {
		t.Errorf("group without configs told %d ms, want the broker's", got)
	}
	now = now.Add(52 * time.Second) // past the group's 50 s, within the broker's 55 s
	if c.Members("fast") != 0 {
		t.Errorf("a member of fast silent 52 s is still in the group (share.session.timeout.ms 50000)")
	}
	if c.Members("plain") != 1 {
		t.Errorf("a member of plain silent 52 s left before the broker's 55 s")
	}
	if got := <-left; got != "fast/m1" {
		t.Errorf("left: %s", got)
	}

	m := NewManager(Config{Store: nil, SessionTimeout: 45 * time.Second})
	for _, tc := range []struct {
		set  map[string]string
		want string
	}{
		{map[string]string{ConfigSessionTimeout: "50000", ConfigHeartbeatInterval: "6000"}, ""},
		{map[string]string{ConfigSessionTimeout: "44999"}, "share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"},
		{map[string]string{ConfigSessionTimeout: "60001"}, "share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms"},
		{map[string]string{ConfigHeartbeatInterval: "4999"}, "share.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms"},
		{map[string]string{ConfigHeartbeatInterval: "x"}, "Invalid value x for configuration share.heartbeat.interval.ms: Not a number of type INT"},
	} {
		err := m.ValidateGroupConfigs(tc.set)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v refused: %v", tc.set, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%v: %v, want %q", tc.set, err, tc.want)
		}
	}
	var names []string
	for _, e := range m.DescribeGroupConfigs("g") {
		if e.Name == ConfigSessionTimeout || e.Name == ConfigHeartbeatInterval {
			names = append(names, e.Name+"="+e.Value)
		}
	}
	if len(names) != 2 || names[0] != "share.heartbeat.interval.ms=5000" || names[1] != "share.session.timeout.ms=45000" {
		t.Errorf("described defaults %v", names)
	}
}

// groupNames is a MemberLog that says which ids are classic or consumer groups.
type groupNames struct {
	memoryLog
	others map[string]bool
}

func (g *groupNames) IsGroup(name string) bool { return g.others[name] }

// A refused first heartbeat leaves no group (ListGroups does not list it), while
// a group made by Ensure stays; a classic or consumer group's id is refused with
// Kafka's GROUP_ID_NOT_FOUND and message, and no share group is made for it.
func TestRefusedFirstHeartbeatLeavesNoGroup(t *testing.T) {
	log := &groupNames{memoryLog: memoryLog{records: map[string][]byte{}}, others: map[string]bool{"classic": true}}
	c := NewCoordinator(Config{MemberLog: log}, func(string) (TopicInfo, bool) { return TopicInfo{}, false }, func(string, string) {})
	beat := func(group string, topics []string) *kmsg.ShareGroupHeartbeatResponse {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.SubscribedTopicNames = group, "m1", topics
		return c.Heartbeat(context.Background(), req, Client{ID: "c", Host: "h"})
	}
	if code := beat("g", nil).ErrorCode; code != kerr.InvalidRequest.Code {
		t.Fatalf("first heartbeat without a subscription: %v", kerr.ErrorForCode(code))
	}
	if c.Has("g") || len(c.ListGroups(kmsg.NewPtrListGroupsRequest()).Groups) != 0 {
		t.Fatalf("a refused first heartbeat left group g (known %v)", c.Groups())
	}
	resp := beat("classic", []string{"t"})
	if resp.ErrorCode != kerr.GroupIDNotFound.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != "Group classic is not a share group." {
		t.Fatalf("heartbeat for a classic group's id: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	if c.Has("classic") {
		t.Fatal("a share group was made for a classic group's id")
	}
	if code := c.Ensure(context.Background(), "kept"); code != 0 {
		t.Fatalf("ensure: %v", kerr.ErrorForCode(code))
	}
	if code := beat("kept", nil).ErrorCode; code != kerr.InvalidRequest.Code {
		t.Fatalf("first heartbeat without a subscription: %v", kerr.ErrorForCode(code))
	}
	if !c.Has("kept") {
		t.Fatal("a refused heartbeat removed a group made by Ensure")
	}
}
