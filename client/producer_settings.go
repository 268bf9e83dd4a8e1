package client

// The producer settings that skiff produce and skiff bench share, read from
// their flags' text.

import (
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultDeliveryTimeout is how long a record may wait for its acknowledgement
// unless --delivery-timeout says otherwise (Kafka's delivery.timeout.ms).
const DefaultDeliveryTimeout = 2 * time.Minute

// ParseAcks maps --acks to franz-go's setting. Idempotent writes (franz-go's
// default, no duplicates on retry) require acks=all.
func ParseAcks(s string) (acks kgo.Acks, idempotent bool, err error) {
	switch strings.ToLower(s) {
	case "all", "-1":
		return kgo.AllISRAcks(), true, nil
	case "1", "leader":
		return kgo.LeaderAck(), false, nil
	case "0", "none":
		return kgo.NoAck(), false, nil
	}
	return kgo.Acks{}, false, fmt.Errorf("invalid --acks %q: want all, 1 or 0", s)
}

// ParseCompression maps --compression to franz-go's codec.
func ParseCompression(s string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(s) {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("invalid --compression %q: want none, gzip, snappy, lz4 or zstd", s)
}
