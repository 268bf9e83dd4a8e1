package embedetcd

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// TestMembershipRetriesEtcdTimeouts: a membership request that etcd answers with one
// of its timeouts (it gave up waiting for a change raft may have dropped, a moment
// after the client's own deadline, which a busy machine may not have noticed yet) is
// asked again, as one that got no answer at all is. The first request of each
// membership method gets the timeout from a client interceptor.
func TestMembershipRetriesEtcdTimeouts(t *testing.T) {
	m, err := Start(context.Background(), testConfig(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, timeout := range []error{rpctypes.ErrGRPCTimeout, rpctypes.ErrGRPCTimeoutDueToLeaderFail, rpctypes.ErrGRPCTimeoutDueToConnectionLost} {
		t.Run(strings.TrimPrefix(rpctypes.ErrorDesc(timeout), "etcdserver: "), func(t *testing.T) {
			cli := timingOutClient(t, m, timeout)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			peer, err := bindAddr("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			id, _, err := AddMember(ctx, cli, nil, "learner", "http://"+peer, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatalf("add: %v", err)
			}
			if err := Promote(ctx, cli, m.ID()); err != nil { // already voting: done
				t.Fatalf("promote: %v", err)
			}
			if err := RemoveMember(ctx, cli, id); err != nil {
				t.Fatalf("remove: %v", err)
			}
			list, err := cli.MemberList(ctx)
			if err != nil || len(list.Members) != 1 {
				t.Fatalf("members after the removal: %v %v", list, err)
			}
		})
	}
}

// timingOutClient is a client of m whose first request of each etcd Cluster method
// fails with timeout, as etcd's own answer would (it is not sent).
func timingOutClient(t *testing.T, m *Member, timeout error) *clientv3.Client {
	t.Helper()
	var mu sync.Mutex
	failed := map[string]bool{}
	fail := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		mu.Lock()
		first := !failed[method]
		failed[method] = true
		mu.Unlock()
		if first && strings.HasPrefix(method, "/etcdserverpb.Cluster/") {
			return timeout
		}
		return invoke(ctx, method, req, reply, cc, opts...)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{m.ClientURL()},
		DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(fail)},
		Logger:      newZapLogger(slog.DiscardHandler, m.closing),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
