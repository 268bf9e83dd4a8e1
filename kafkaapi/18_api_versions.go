package kafkaapi

// ApiVersions, key 18, versions 0..3 advertised; 4 served with Config.TxnV2.
//
// Behaviour: lists exactly the served keys and versions (the table of apis.go). v3
// requests are flexible but the response header never carries tagged fields, so old
// clients can always parse the answer. A version above the served ones is answered
// with the v0 body and UNSUPPORTED_VERSION. Served before authentication.
//
// Features (KIP-584): none without Config.TxnV2. With it (transaction version 2,
// inert until WP4 of docs/design/txn-v2.md), v3+ answers list the versions of
// transaction version 2 as their keys' maximum (api.txnV2Max), the finalized
// feature transaction.version at level 2 with a finalized-features epoch >= 0
// (what franz-go and Java clients read to opt in), and, from v4, the supported
// range transaction.version 0..2: as Kafka does, v3 omits a supported feature
// whose minimum is 0 (KAFKA-17011: older clients reject it).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api[*kmsg.ApiVersionsRequest]{
		min: 0, max: 3, txnV2Max: 4,
		handle:              (*Server).handleApiVersions,
		beforeAuth:          true,
		plainResponseHeader: true,
		unsupported:         unsupportedApiVersions,
	})
}

// The feature of transaction version 2 and its levels.
const (
	txnVersionFeature = "transaction.version"
	txnVersionMax     = 2
	// txnV2FeaturesEpoch is the finalized-features epoch answered with
	// Config.TxnV2: any value >= 0 says the finalized features are known. WP4
	// answers the revision of the finalized level in etcd instead.
	txnV2FeaturesEpoch = 0
)

func (s *Server) handleApiVersions(_ *conn, _ *RequestHeader, req *kmsg.ApiVersionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = apiVersionsWith(s.cfg.TxnV2)
	if s.cfg.TxnV2 && req.Version >= 3 {
		resp.FinalizedFeaturesEpoch = txnV2FeaturesEpoch
		f := kmsg.NewApiVersionsResponseFinalizedFeature()
		f.Name, f.MinVersionLevel, f.MaxVersionLevel = txnVersionFeature, txnVersionMax, txnVersionMax
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, f)
		if req.Version >= 4 {
			sf := kmsg.NewApiVersionsResponseSupportedFeature()
			sf.Name, sf.MinVersion, sf.MaxVersion = txnVersionFeature, 0, txnVersionMax
			resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		}
	}
	return resp
}

// unsupportedApiVersions answers a version above the served ones: the v0 body,
// which every client parses, with the served versions, so the client can retry
// at one it knows. With transaction version 2 it lists only ApiVersions' own
// range, as Kafka does (KIP-511): franz-go retries at that version only then,
// and takes a longer list as the broker's versions without the finalized
// features (a v0 body has none), so it would not choose TV2 on that broker.
func unsupportedApiVersions(txnV2 bool) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = apiVersionsWith(txnV2)
	if txnV2 {
		for _, k := range resp.ApiKeys {
			if k.ApiKey == 18 {
				resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{k}
				break
			}
		}
	}
	return resp
}
