package kafkaapi_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/kafkaapi"
)

// TestUnsupportedVersions checks the answers to keys and versions outside the
// profile: ApiVersions gets its v0 body with UNSUPPORTED_VERSION and the supported
// ranges (so a newer client can retry at a version it knows); any other key or version
// gets UNSUPPORTED_VERSION; and the connection keeps working after each.
func TestUnsupportedVersions(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	profile := advertisedProfile(t, c)
	stillServed := func(t *testing.T) {
		t.Helper()
		if got := advertisedProfile(t, c); !sameKeys(got, profile) {
			t.Fatalf("after the refusal ApiVersions lists %+v, want %+v", got, profile)
		}
	}

	for _, v := range []int16{4, 5, 100, 32767} {
		t.Run(fmt.Sprintf("ApiVersions-v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(v)
			req.ClientSoftwareName, req.ClientSoftwareVersion = "future-client", "9.9"
			corr := c.send(req)
			frame, err := c.readFrame(ioTimeout)
			if err != nil {
				t.Fatal(err)
			}
			// The answer is a v0 body, whatever version was asked.
			resp, err := parseResponse(18, 0, corr, frame)
			if err != nil {
				t.Fatal(err)
			}
			av := resp.(*kmsg.ApiVersionsResponse)
			wantCode(t, "ApiVersions", av.ErrorCode, kerr.UnsupportedVersion.Code)
			if !sameKeys(av.ApiKeys, profile) {
				t.Fatalf("keys %+v, want the profile %+v", av.ApiKeys, profile)
			}
			stillServed(t)
		})
	}

	// unsupported sends a frame and expects the 2-byte UNSUPPORTED_VERSION body.
	unsupported := func(t *testing.T, frame []byte, corr int32) {
		t.Helper()
		c.write(frame)
		got, err := c.readFrame(ioTimeout)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 6 {
			t.Fatalf("answer %x, want correlation id and error code only", got)
		}
		if gc := int32(binary.BigEndian.Uint32(got)); gc != corr {
			t.Fatalf("correlation id %d, want %d", gc, corr)
		}
		wantCode(t, "answer", int16(binary.BigEndian.Uint16(got[4:])), kerr.UnsupportedVersion.Code)
		stillServed(t)
	}

	for _, key := range []int16{999, -1, 71, 72} {
		t.Run(fmt.Sprintf("key-%d", key), func(t *testing.T) {
			corr := c.nextCorr()
			unsupported(t, rawFrame(key, 0, corr, []byte{0, 0, 0, 0}), corr)
		})
	}

	// Versions just outside each advertised range, at both ends, built by kmsg;
	// the one a node serves to brokers without advertising it (WriteTxnMarkers
	// v2, TestWriteTxnMarkersV2AtTxnVersion1) is left out, and it alone.
	var servedUnadvertised []string
	for _, k := range profile {
		if k.ApiKey == 18 {
			continue
		}
		for _, v := range []int16{k.MinVersion - 1, k.MaxVersion + 1} {
			req := kmsg.RequestForKey(k.ApiKey)
			if v < 0 || v > req.MaxVersion() {
				continue
			}
			if kafkaapi.ServedAt(k.ApiKey, v) {
				servedUnadvertised = append(servedUnadvertised, fmt.Sprintf("%s v%d", kmsg.NameForKey(k.ApiKey), v))
				continue
			}
			t.Run(fmt.Sprintf("%s-v%d", kmsg.NameForKey(k.ApiKey), v), func(t *testing.T) {
				req.SetVersion(v)
				corr := c.nextCorr()
				unsupported(t, encodeRequest(req, corr), corr)
			})
		}
	}
	if want := []string{"WriteTxnMarkers v2"}; !slices.Equal(servedUnadvertised, want) {
		t.Errorf("served without being advertised: %v, want %v", servedUnadvertised, want)
	}
	// The examples of PROTOCOL.md's profile: Produce v2 (old record format) and Fetch
	// v12 (the first flexible version) must be refused, and v100 of anything.
	for _, tc := range []struct{ key, version int16 }{{0, 2}, {1, 12}, {3, 100}} {
		t.Run(fmt.Sprintf("%s-v%d-raw", kmsg.NameForKey(tc.key), tc.version), func(t *testing.T) {
			corr := c.nextCorr()
			unsupported(t, rawFrame(tc.key, tc.version, corr, make([]byte, 32)), corr)
		})
	}
}

// TestFlexibleHeaderTags sends flexible requests whose request header carries tagged
// fields (KIP-482 allows unknown tags anywhere): they are skipped, not misread.
func TestFlexibleHeaderTags(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	profile := advertisedProfile(t, c)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "tagged", "1"
	for _, tags := range [][]byte{
		{1, 7, 3, 'a', 'b', 'c'},               // one unknown tag of 3 bytes
		{2, 0, 0, 9, 2, 0xff, 0xfe},            // two tags, one empty
		{1, 0x80, 0x01, 0x81, 0x01, 0x00, 'x'}, // multi-byte tag and size: 128, 129 bytes
	} {
		if tags[1] == 0x80 {
			tags = append(tags[:5], make([]byte, 129)...)
		}
		corr := c.nextCorr()
		frame := rawFrame(18, 3, corr, append(tags, req.AppendTo(nil)...))
		c.write(frame)
		got, err := c.readFrame(ioTimeout)
		if err != nil {
			t.Fatalf("header tags %x: %v", tags[:min(len(tags), 8)], err)
		}
		resp, err := parseResponse(18, 3, corr, got)
		if err != nil {
			t.Fatal(err)
		}
		av := resp.(*kmsg.ApiVersionsResponse)
		wantCode(t, "ApiVersions with header tags", av.ErrorCode, 0)
		if !sameKeys(av.ApiKeys, profile) {
			t.Fatalf("keys %+v, want %+v", av.ApiKeys, profile)
		}
	}
	// A tag section that runs past the frame cannot be skipped: the stream is lost.
	bad := dial(t, n.KafkaAddr())
	bad.write(rawFrame(18, 3, bad.nextCorr(), []byte{1, 7, 100, 'a'}))
	bad.expectClosed("a header tag longer than the frame")
}
