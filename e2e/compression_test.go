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

// TestCompressionTypeKcat: kcat (librdkafka) produces plain batches to topics whose
// compression.type makes the broker recompress them with each codec (snappy in
// the xerial framing), and reads every line back byte for byte.
func TestCompressionTypeKcat(t *testing.T) {
	n := testnode.Start(t)
	var in bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&in, "line %04d: %s\n", i, strings.Repeat("z", i%100))
	}
	adm := kadm.NewClient(newClient(t, n.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, codec := range []string{"gzip", "snappy", "lz4", "zstd", "uncompressed"} {
		topic := "recompressed-" + codec
		if r, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"compression.type": &codec}, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
		runKcat(t, in.Bytes(), "-b", n.Addr, "-P", "-t", topic, "-z", "none")
		out := runKcat(t, nil, "-b", n.Addr, "-C", "-t", topic, "-o", "beginning", "-e", "-q")
		if !bytes.Equal(out, in.Bytes()) {
			t.Errorf("compression.type=%s: kcat read %d bytes, produced %d: not identical", codec, len(out), in.Len())
		}
	}
}
