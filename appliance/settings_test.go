package appliance

import (
	"context"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"skiff/cluster"
)

// nonDefault is a valid value of s other than its default.
func nonDefault(s Setting) string {
	switch s.Kind() {
	case KindBool:
		return strconv.FormatBool(s.Default() != "true")
	case KindInt:
		n, _ := strconv.Atoi(s.Default())
		if s.Check(strconv.Itoa(n+7)) != nil {
			return strconv.Itoa(n + 1) // a narrow range (transaction-version)
		}
		return strconv.Itoa(n + 7)
	case KindDuration:
		return "7s"
	}
	return "127.0.0.7:7"
}

func byName(c *Config, name string) Setting {
	for _, s := range c.Settings() {
		if s.Name == name {
			return s
		}
	}
	panic("no setting " + name)
}

// The table is well formed, and every setting is bound to a field of its own: a
// zero Config takes every default, and setting one to another value moves that one
// alone off its default.
func TestSettingsTable(t *testing.T) {
	names, kafka := map[string]bool{}, map[string]bool{}
	var zero Config
	zero.setDefaults()
	for _, s := range zero.Settings() {
		if names[s.Name] || s.Name != strings.ToLower(s.Name) || strings.ContainsAny(s.Name, "_. ") {
			t.Errorf("setting name %q: repeated, or not lowercase words joined by dashes", s.Name)
		}
		names[s.Name] = true
		if s.Kafka != "" && kafka[s.Kafka] {
			t.Errorf("%s: Kafka name %q repeated", s.Name, s.Kafka)
		}
		kafka[s.Kafka] = true
		if (s.Kafka == "") != (s.KafkaType == cluster.ConfigTypeUnknown) || (s.Kafka == "" && s.Unlisted) {
			t.Errorf("%s: Kafka name %q with type %d, unlisted %v", s.Name, s.Kafka, s.KafkaType, s.Unlisted)
		}
		if s.Doc == "" || strings.HasSuffix(s.Doc, ".") || (s.Kafka != "" && strings.Contains(s.Doc, s.Kafka)) {
			t.Errorf("%s: doc %q: want one line without a final period, the Kafka name left to --help", s.Name, s.Doc)
		}
		if err := s.Check(s.Default()); err != nil {
			t.Errorf("%s: the default %q is refused: %v", s.Name, s.Default(), err)
		}
		if !s.v.isDefault() {
			t.Errorf("%s: a zero Config does not take the default %q", s.Name, s.Default())
		}
	}
	for _, changed := range zero.Settings() {
		c := zero
		s := byName(&c, changed.Name)
		if err := s.Set(nonDefault(s)); err != nil {
			t.Fatalf("%s: set %q: %v", s.Name, nonDefault(s), err)
		}
		for _, o := range c.Settings() {
			if o.v.isDefault() != (o.Name != s.Name) {
				t.Errorf("after setting %s to %s, %s is at its default: %v", s.Name, nonDefault(s), o.Name, o.v.isDefault())
			}
		}
	}
}

func TestSettingValues(t *testing.T) {
	var c Config
	for _, tc := range []struct{ name, value, err string }{
		{"max-connections", "ten", `"ten" is not a whole number`},
		{"default-replication-factor", "40000", `"40000" is not a whole number`}, // int16
		{"pprof", "yes", `"yes" is not true or false`},
		{"join-timeout", "-1s", `"-1s" is not a duration such as 30s or 10m`},
		{"join-timeout", "5", `"5" is not a duration such as 30s or 10m`},
		{"transaction-version", "3", `3 is not between 1 and 2`},
		{"transaction-version", "0", `0 is not between 1 and 2`},
	} {
		err := byName(&c, tc.name).Set(tc.value)
		if err == nil || err.Error() != tc.err {
			t.Errorf("%s=%s: %v, want %q", tc.name, tc.value, err, tc.err)
		}
	}
	if !reflect.DeepEqual(c, Config{}) {
		t.Errorf("refused values changed the config: %+v", c)
	}

	set := func(name, value string) {
		t.Helper()
		if err := byName(&c, name).Set(value); err != nil {
			t.Fatal(err)
		}
	}
	set("auto-create-topics", "false")
	set("auto-leader-rebalance", "true")
	set("group-initial-rebalance-delay", "0")
	set("join", " a:1, ,b:2")
	set("offsets-retention", "48h")
	c.setDefaults()
	if !c.DisableAutoCreateTopics || c.DisableAutoLeaderRebalance {
		t.Errorf("auto-create-topics=false, auto-leader-rebalance=true gave Disable* %v, %v", c.DisableAutoCreateTopics, c.DisableAutoLeaderRebalance)
	}
	if c.Groups.InitialRebalanceDelay >= 0 {
		t.Errorf("group-initial-rebalance-delay=0 gave %v, want none (negative), kept by the defaults", c.Groups.InitialRebalanceDelay)
	}
	if strings.Join(c.Join, " ") != "a:1 b:2" {
		t.Errorf("join %q", c.Join)
	}

	n := &Node{cfg: c, id: 3}
	got := map[string]string{}
	for _, bc := range n.brokerConfigs() {
		got[bc.Name] = bc.Value
	}
	for name, want := range map[string]string{
		"broker.id":                        "3",
		"auto.create.topics.enable":        "false",
		"group.initial.rebalance.delay.ms": "0",
		"offsets.retention.minutes":        "2880",
		"max.connections.per.ip":           strconv.Itoa(math.MaxInt32), // 0: no limit, as Kafka writes it
		"connections.max.idle.ms":          "600000",
		"broker.session.timeout.ms":        "6000",
	} {
		if got[name] != want {
			t.Errorf("DescribeConfigs %s = %q, want %q", name, got[name], want)
		}
	}
}

// brokerConfigs lists the broker's id and every listed setting with a Kafka name.
// A setting given another value flips from is_default to not.
func TestBrokerConfigsDefaults(t *testing.T) {
	var c Config
	c.setDefaults()
	for _, changed := range c.Settings() {
		if changed.Kafka == "" || changed.Unlisted {
			continue
		}
		cc := c
		if err := byName(&cc, changed.Name).Set(nonDefault(changed)); err != nil {
			t.Fatal(err)
		}
		n := &Node{cfg: cc, id: 1}
		listed := 0
		for _, bc := range n.brokerConfigs() {
			listed++
			if bc.ReadOnly == (bc.Check != nil) {
				t.Errorf("%s: read-only %v, with a check %v", bc.Name, bc.ReadOnly, bc.Check != nil)
			}
			if want := bc.Name != changed.Kafka && bc.Name != "broker.id"; bc.IsDefault != want {
				t.Errorf("with %s=%s: %s = %s is_default %v", changed.Name, nonDefault(changed), bc.Name, bc.Value, bc.IsDefault)
			}
		}
		if listed != len(describedConfigs) {
			t.Errorf("%d broker configs, want %d", listed, len(describedConfigs))
		}
	}
	var names []string
	for _, bc := range (&Node{cfg: c}).brokerConfigs() {
		names = append(names, bc.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, describedConfigs) {
		t.Errorf("DescribeConfigs lists %q\nwant %q", names, describedConfigs)
	}
}

// describedConfigs are the broker configs DescribeConfigs lists, sorted.
var describedConfigs = []string{
	"auto.create.topics.enable", "broker.id", "broker.session.timeout.ms", "connection.failed.authentication.delay.ms", "connections.max.idle.ms", "connections.max.reauth.ms",
	"default.replication.factor", "follower.replication.throttled.rate", "group.consumer.assignors", "group.consumer.heartbeat.interval.ms",
	"group.consumer.max.heartbeat.interval.ms", "group.consumer.max.session.timeout.ms", "group.consumer.migration.policy",
	"group.consumer.min.heartbeat.interval.ms", "group.consumer.min.session.timeout.ms", "group.consumer.session.timeout.ms", "group.initial.rebalance.delay.ms", "group.max.session.timeout.ms",
	"group.max.size", "group.min.session.timeout.ms", "group.share.delivery.count.limit", "group.share.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms", "group.share.max.session.timeout.ms", "group.share.min.heartbeat.interval.ms", "group.share.min.session.timeout.ms",
	"group.share.partition.max.record.locks", "group.share.record.lock.duration.ms", "group.share.session.timeout.ms", "leader.replication.throttled.rate", "log.cleaner.backoff.ms",
	"log.cleaner.dedupe.buffer.size", "log.cleaner.io.max.bytes.per.second", "log.cleaner.threads", "log.retention.check.interval.ms",
	"max.connections", "max.connections.per.ip", "num.partitions", "offsets.retention.check.interval.ms",
	"offsets.retention.minutes", "offsets.topic.num.partitions", "offsets.topic.replication.factor",
	"producer.id.expiration.ms", "queued.max.request.bytes", "quota.window.num", "quota.window.size.seconds", "sasl.enabled.mechanisms", "socket.request.max.bytes",
	"transaction.abort.timed.out.transaction.cleanup.interval.ms", "transaction.max.timeout.ms",
	"transaction.state.log.num.partitions", "transaction.state.log.replication.factor", "transactional.id.expiration.ms",
}

// A Kafka client sees the broker's settings with is_default (v0) and source (v3):
// DEFAULT_CONFIG for a setting left alone, STATIC_BROKER_CONFIG for one given.
func TestDescribeBrokerConfigs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startLoopbackNode(t, Config{MaxConnections: 500, Groups: GroupConfig{MaxSize: 10}})
	// franz-go sends the highest version both sides know: pin v0 by naming Kafka 0.11,
	// and v3 by capping DescribeConfigs.
	v3 := kversion.Stable()
	v3.SetMaxKeyVersion(32, 3)
	clients := map[int16]*kgo.Client{}
	for version, opts := range map[int16][]kgo.Opt{0: {kgo.MaxVersions(kversion.V0_11_0())}, 3: {kgo.MaxVersions(v3)}} {
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(n.KafkaAddr()))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		clients[version] = cl
	}
	want := map[string]struct {
		value    string
		deflt    bool
		source   kmsg.ConfigSource
		cfgType  kmsg.ConfigType
		readOnly bool
	}{
		"max.connections":           {"500", false, kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigTypeInt, false},
		"group.max.size":            {"10", false, kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigTypeInt, true},
		"num.partitions":            {"1", true, kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeInt, false},
		"connections.max.idle.ms":   {"600000", true, kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong, true},
		"auto.create.topics.enable": {"true", true, kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeBoolean, false},
		"log.retention.ms":          {"604800000", true, kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong, false},
	}
	for _, version := range []int16{0, 3} {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.SetVersion(version)
		req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: strconv.Itoa(int(n.ID()))}}
		resp, err := req.RequestWith(ctx, clients[version])
		if err != nil {
			t.Fatal(err)
		}
		if resp.Version != version || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("v%d: %+v", version, resp.Resources)
		}
		seen := 0
		for _, rc := range resp.Resources[0].Configs {
			w, ok := want[rc.Name]
			if !ok {
				continue
			}
			seen++
			if rc.Value == nil || *rc.Value != w.value || rc.ReadOnly != w.readOnly {
				t.Errorf("v%d %s = %v (read-only %v), want %s, read-only %v", version, rc.Name, rc.Value, rc.ReadOnly, w.value, w.readOnly)
			}
			if version == 0 && rc.IsDefault != w.deflt {
				t.Errorf("v0 %s is_default %v, want %v", rc.Name, rc.IsDefault, w.deflt)
			}
			if version == 3 && (rc.Source != w.source || rc.ConfigType != w.cfgType) {
				t.Errorf("v3 %s source %v type %v, want %v, %v", rc.Name, rc.Source, rc.ConfigType, w.source, w.cfgType)
			}
		}
		if seen != len(want) {
			t.Errorf("v%d: %d of the %d configs checked are listed", version, seen, len(want))
		}
	}
}

// startLoopbackNode starts a node with cfg on 127.0.0.1, every port chosen by the
// kernel, its data in a temporary folder; the test's cleanup closes it.
func startLoopbackNode(t *testing.T, cfg Config) *Node {
	t.Helper()
	cfg.DataDir, cfg.Logger = t.TempDir(), slog.New(slog.DiscardHandler)
	cfg.Listen, cfg.EtcdClient, cfg.EtcdPeer, cfg.HTTP = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	return n
}

// Every dynamic setting takes its value in Kafka's form (what DescribeConfigs
// shows), and refuses what is not one.
func TestSettingsKafkaForm(t *testing.T) {
	var c Config
	c.setDefaults()
	dynamic := 0
	for _, s := range c.Settings() {
		if !s.Dynamic {
			continue
		}
		dynamic++
		if s.Kafka == "" {
			t.Errorf("%s is dynamic without a Kafka name", s.Name)
			continue
		}
		var from, to Config
		from.setDefaults()
		v := nonDefault(s)
		if s.Kind() == KindDuration {
			v = "7m" // a whole number of every unit
		}
		if err := byName(&from, s.Name).Set(v); err != nil {
			t.Fatal(err)
		}
		text := byName(&from, s.Name).v.kafka(s.Kafka)
		if err := byName(&to, s.Name).SetKafka(text); err != nil {
			t.Errorf("%s: SetKafka(%q): %v", s.Kafka, text, err)
			continue
		}
		to.setDefaults()
		if got := byName(&to, s.Name).v.kafka(s.Kafka); got != text {
			t.Errorf("%s: SetKafka(%q) reads back as %q", s.Kafka, text, got)
		}
		if _, ok := cluster.LookupTopicDefault(s.Kafka); ok {
			continue // checked with the topic config's rules (kafkaapi), not here
		}
		for _, bad := range []string{"x", "-1", ""} {
			if err := s.CheckKafka(bad); err == nil {
				t.Errorf("%s: CheckKafka(%q) accepted", s.Kafka, bad)
			}
		}
	}
	if dynamic < 5 {
		t.Errorf("%d dynamic settings", dynamic)
	}
	if err := byName(&c, "max-connections-per-ip").CheckKafka("0"); err != nil {
		t.Errorf("max.connections.per.ip 0 (no limit): %v", err)
	}
	if err := byName(&c, "log-retention-check-interval").CheckKafka("0"); err == nil {
		t.Error("log.retention.check.interval.ms 0 accepted")
	}
	var d Config
	if err := byName(&d, "offsets-retention").SetKafka("90"); err != nil || d.Groups.OffsetsRetention != 90*time.Minute {
		t.Errorf("offsets.retention.minutes 90: %v, %v", d.Groups.OffsetsRetention, err)
	}
}

// group.consumer.migration.policy takes Kafka's four values, in any case.
func TestMigrationPolicyValidate(t *testing.T) {
	for policy, ok := range map[string]bool{"": true, "bidirectional": true, "UPGRADE": true, "Downgrade": true, "disabled": true, "both": false} {
		var c Config
		c.Groups.ConsumerMigrationPolicy = policy
		err := c.Validate()
		if bad := err != nil && strings.Contains(err.Error(), "group-consumer-migration-policy"); bad == ok {
			t.Errorf("policy %q: %v", policy, err)
		}
	}
}
