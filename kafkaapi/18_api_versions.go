package kafkaapi

// ApiVersions, key 18, versions 0..3.
//
// Behaviour: lists exactly the advertised profile (versions.go). v3 requests are
// flexible but the response header never carries tagged fields, so old clients can
// always parse the answer. A version above 3 is answered in conn.writeUnsupported with
// the v0 body and UNSUPPORTED_VERSION. Not implemented: supported/finalized features
// (KIP-584); there are none to report.

import "github.com/twmb/franz-go/pkg/kmsg"

func (s *Server) handleApiVersions(req *kmsg.ApiVersionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = apiKeys()
	return resp
}
