package kafkaapi

// ApiVersions, key 18, versions 0..3.
//
// Behaviour: lists exactly the served keys and versions (the table of apis.go). v3
// requests are flexible but the response header never carries tagged fields, so old
// clients can always parse the answer. A version above 3 is answered with the v0
// body and UNSUPPORTED_VERSION. Served before authentication. Not implemented:
// supported/finalized features (KIP-584); there are none to report.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api[*kmsg.ApiVersionsRequest]{
		min: 0, max: 3,
		handle:              (*Server).handleApiVersions,
		beforeAuth:          true,
		plainResponseHeader: true,
		unsupported:         unsupportedApiVersions,
	})
}

func (s *Server) handleApiVersions(_ *conn, _ *RequestHeader, req *kmsg.ApiVersionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = APIVersions()
	return resp
}

// unsupportedApiVersions answers a version above 3: the v0 body, which every client
// parses, with the served versions, so the client can retry at one it knows.
func unsupportedApiVersions() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = APIVersions()
	return resp
}
