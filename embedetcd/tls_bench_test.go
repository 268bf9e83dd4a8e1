package embedetcd

import (
	"context"
	"crypto/x509/pkix"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"skiff/internal/testcerts"
)

// BenchmarkClientTLS: what TLS on the client and peer ports (etcd-tls, --secure)
// costs one member's own client, one request at a time: a Put (a raft proposal and
// an fsync) and a serializable Get (a round trip to the member, no consensus).
func BenchmarkClientTLS(b *testing.B) {
	for _, withTLS := range []bool{false, true} {
		cfg := testConfig(b, nil)
		name := "plaintext"
		if withTLS {
			ca := testcerts.NewCA(b, b.TempDir(), "cluster")
			cfg.TLS, name = tlsLoader(b, ca, ca.Issue(b, "n1", pkix.Name{CommonName: "n1"})), "tls"
		}
		m, err := Start(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		cli := m.Client()
		ctx := context.Background()
		b.Run(name+"/put", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := cli.Put(ctx, fmt.Sprintf("k%d", i%100), "value"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/get", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := cli.Get(ctx, fmt.Sprintf("k%d", i%100), clientv3.WithSerializable()); err != nil {
					b.Fatal(err)
				}
			}
		})
		m.Close()
	}
}
