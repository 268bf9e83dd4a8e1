package kafkaapi_test

// DescribeCluster (key 60): its conformance at each version on the shared node,
// and the authorized operations it reports under the ACL authorizer.

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { conformanceTests[60] = conformDescribeCluster }

// conformDescribeCluster: at every version the node describes itself as the one
// broker, at the address dialled, and as the controller, with Metadata's cluster
// id; without an authorizer the operations are "not known"; from v1 on, a request
// for controllers or an unknown endpoint type is refused.
func conformDescribeCluster(t *testing.T, c *kconn, versions []int16) {
	host, portStr, _ := net.SplitHostPort(c.nc.RemoteAddr().String())
	port, _ := strconv.Atoi(portStr)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	clusterID := c.do(md).(*kmsg.MetadataResponse).ClusterID
	if clusterID == nil || *clusterID == "" {
		t.Fatal("Metadata names no cluster id")
	}
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrDescribeClusterRequest()
			req.SetVersion(v)
			req.IncludeClusterAuthorizedOperations = true
			req.IncludeFencedBrokers = true
			resp := c.do(req).(*kmsg.DescribeClusterResponse)
			wantCode(t, "DescribeCluster", resp.ErrorCode, 0)
			if resp.ClusterID != *clusterID {
				t.Errorf("cluster id %q, Metadata says %q", resp.ClusterID, *clusterID)
			}
			if resp.ControllerID != 1 {
				t.Errorf("controller %d, want 1", resp.ControllerID)
			}
			if len(resp.Brokers) != 1 {
				t.Fatalf("brokers %+v, want this one node", resp.Brokers)
			}
			if b := resp.Brokers[0]; b.NodeID != 1 || b.Host != host || b.Port != int32(port) || b.IsFenced {
				t.Errorf("broker %+v, want 1 at %s:%d, not fenced", b, host, port)
			}
			if resp.ClusterAuthorizedOperations != -2147483648 {
				t.Errorf("authorized operations %d without an authorizer, want INT32_MIN", resp.ClusterAuthorizedOperations)
			}
			if v < 1 {
				return
			}
			if resp.EndpointType != 1 {
				t.Errorf("endpoint type %d, want 1 (brokers)", resp.EndpointType)
			}
			for typ, want := range map[int8]int16{2: kerr.MismatchedEndpointType.Code, 7: kerr.UnsupportedEndpointType.Code} {
				req.EndpointType = typ
				resp := c.do(req).(*kmsg.DescribeClusterResponse)
				wantCode(t, fmt.Sprintf("endpoint type %d", typ), resp.ErrorCode, want)
				if resp.ErrorMessage == nil || len(resp.Brokers) != 0 {
					t.Errorf("endpoint type %d: message %v, brokers %+v; want a message and no brokers", typ, resp.ErrorMessage, resp.Brokers)
				}
			}
		})
	}
}

// TestDescribeClusterAuthorizedOperations: a client granted ALTER on the
// cluster (which implies DESCRIBE) learns exactly those operations, decoded by
// kadm (which has no DescribeCluster call of its own: the request goes through
// the franz-go client); the super user learns every cluster operation.
func TestDescribeClusterAuthorizedOperations(t *testing.T) {
	p := topicName(t, "")
	who := "dc-" + p
	createACLUser(t, who)
	grant(t, who, "ALLOW ALTER CLUSTER LITERAL kafka-cluster")
	ops := func(cl *kgo.Client) []kadm.ACLOperation {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = true
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, "DescribeCluster", resp.ErrorCode, 0)
		if len(resp.Brokers) != 1 || resp.ClusterID == "" {
			t.Errorf("brokers %+v, cluster %q: want the ACL node and an id", resp.Brokers, resp.ClusterID)
		}
		return kadm.DecodeACLOperations(resp.ClusterAuthorizedOperations)
	}
	if got, want := ops(aclUserClient(t, who)), []kadm.ACLOperation{kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe}; !slices.Equal(sortedOps(got), sortedOps(want)) {
		t.Errorf("%s's cluster operations %v, want %v", who, got, want)
	}
	if got := ops(aclAdminClient(t)); !slices.Contains(got, kmsg.ACLOperationClusterAction) || !slices.Contains(got, kmsg.ACLOperationIdempotentWrite) {
		t.Errorf("the super user's cluster operations %v lack CLUSTER_ACTION or IDEMPOTENT_WRITE", got)
	}
}

func sortedOps(ops []kadm.ACLOperation) []kadm.ACLOperation {
	ops = slices.Clone(ops)
	slices.Sort(ops)
	return ops
}
