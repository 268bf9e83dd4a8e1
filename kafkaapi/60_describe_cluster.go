package kafkaapi

// DescribeCluster, key 60, versions 0..2 (KIP-700; endpoint types KIP-919; fenced
// brokers KIP-1073).
//
// Behaviour: the cluster id, the controller (-1 while there is none, or while it
// has no address on the client's listener, as Kafka answers) and every live broker
// with its advertised address on the listener the client came in on and its rack,
// as Metadata lists them. Skiff's brokers are its nodes, which answer for the
// cluster's brokers only: endpoint type 2 (controllers, v1+) is
// MISMATCHED_ENDPOINT_TYPE and an unknown type UNSUPPORTED_ENDPOINT_TYPE (v0 cannot
// ask). A node without a live session is not listed, so include_fenced_brokers (v2)
// adds no one and no broker is fenced.
//
// Authorization, as in Kafka: none for the answer itself. Asked for, the cluster's
// authorized operations are reported: 0 without DESCRIBE on the cluster, Kafka's
// "not known" value without an authorizer.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

// Endpoint types of DescribeCluster v1+.
const (
	endpointBrokers     = 1
	endpointControllers = 2
)

func init() {
	register(api[*kmsg.DescribeClusterRequest]{
		min: 0, max: 2,
		handle: (*Server).handleDescribeCluster,
	})
}

func (s *Server) handleDescribeCluster(c *conn, _ *RequestHeader, req *kmsg.DescribeClusterRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointBrokers
	if req.Version >= 1 && req.EndpointType != endpointBrokers {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		if req.EndpointType == endpointControllers {
			resp.ErrorCode = kerr.MismatchedEndpointType.Code
		}
		msg := fmt.Sprintf("endpoint type %d is not served: Skiff's nodes describe brokers (type 1)", req.EndpointType)
		resp.ErrorMessage = &msg
		return resp
	}
	snap := s.cache.Snapshot()
	resp.ClusterID = snap.ClusterID()
	resp.ControllerID = -1
	for _, b := range snap.Brokers() {
		host, port, ok := b.Address(c.listener.Name)
		if !ok {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = b.ID, host, port
		if b.Rack != "" {
			rack := b.Rack
			rb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, rb)
		if b.ID == snap.Controller() {
			resp.ControllerID = b.ID
		}
	}
	resp.ClusterAuthorizedOperations = authorizedOperationsOmitted
	if req.IncludeClusterAuthorizedOperations && s.authorizer() != nil {
		resp.ClusterAuthorizedOperations = 0
		if c.allowedCluster(acl.OpDescribe) {
			resp.ClusterAuthorizedOperations = c.authorizedOperations(acl.ResourceCluster, acl.ClusterName)
		}
	}
	return resp
}
