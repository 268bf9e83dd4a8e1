package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"skiff/internal/testnode"
)

// TestCompressionTypeKcat: kcat (librdkafka) produces batches, plain and with
// another codec (librdkafka's snappy is unframed), to topics whose compression.type
// makes the broker recompress them with each codec (snappy in the xerial framing),
// and reads every line back byte for byte.
func TestCompressionTypeKcat(t *testing.T) {
	n := testnode.Start(t)
	var in bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&in, "line %04d: %s\n", i, strings.Repeat("z", i%100))
	}
	want := bytes.Repeat(in.Bytes(), 2)
	adm := kadm.NewClient(newClient(t, n.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct{ topic, producer string }{
		{"gzip", "snappy"}, {"snappy", "lz4"}, {"lz4", "zstd"}, {"zstd", "gzip"}, {"uncompressed", "snappy"},
	} {
		topic := "recompressed-" + tc.topic
		if r, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"compression.type": &tc.topic}, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
		runKcat(t, in.Bytes(), "-b", n.Addr, "-P", "-t", topic, "-z", "none")
		runKcat(t, in.Bytes(), "-b", n.Addr, "-P", "-t", topic, "-z", tc.producer)
		out := runKcat(t, nil, "-b", n.Addr, "-C", "-t", topic, "-o", "beginning", "-e", "-q")
		if !bytes.Equal(out, want) {
			t.Errorf("compression.type=%s, produced plain and %s: kcat read %d bytes, produced %d: not identical", tc.topic, tc.producer, len(out), len(want))
		}
	}
}
