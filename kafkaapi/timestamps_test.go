package kafkaapi_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestTimestampBounds: CreateTime batches stamped further in the future than
// message.timestamp.after.max.ms (Kafka 4's default: one hour) or further in the
// past than message.timestamp.before.max.ms are refused with INVALID_TIMESTAMP and
// not appended; LogAppendTime topics take any timestamp.
func TestTimestampBounds(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	at := func(d time.Duration) batchOpts {
		return batchOpts{producerID: -1, epoch: -1, seq: -1, timestamp: time.Now().Add(d).UnixMilli()}
	}
	for _, tc := range []struct {
		name    string
		configs map[string]string
		stamp   time.Duration
		want    int16
	}{
		{"now", nil, 0, 0},
		{"half an hour ahead", nil, 30 * time.Minute, 0},
		{"two hours ahead", nil, 2 * time.Hour, kerr.InvalidTimestamp.Code},
		{"a year back", nil, -365 * 24 * time.Hour, 0},
		{"a day back, at most an hour", map[string]string{"message.timestamp.before.max.ms": "3600000"}, -24 * time.Hour, kerr.InvalidTimestamp.Code},
		{"ten minutes ahead, at most a minute", map[string]string{"message.timestamp.after.max.ms": "60000"}, 10 * time.Minute, kerr.InvalidTimestamp.Code},
		{"two hours ahead, no limit", map[string]string{"message.timestamp.after.max.ms": "9223372036854775807"}, 2 * time.Hour, 0},
		{"two hours ahead, LogAppendTime", map[string]string{"message.timestamp.type": "LogAppendTime"}, 2 * time.Hour, 0},
	} {
		topic := topicName(t, "")
		createTopic(t, c, topic, 1, tc.configs)
		p := produce(t, c, topic, 0, makeBatch(at(tc.stamp), "a", "b"))
		if p.ErrorCode != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, errName(p.ErrorCode), errName(tc.want))
		}
		wantEnd := int64(2)
		if tc.want != 0 {
			wantEnd = 0
		}
		if end := logEnd(t, c, topic, 0); end != wantEnd {
			t.Errorf("%s: log end %d, want %d", tc.name, end, wantEnd)
		}
	}
}
