package client

import "testing"

func TestParseAcksAndCompression(t *testing.T) {
	for _, s := range []string{"all", "-1", "1", "leader", "0", "none", "ALL"} {
		if _, _, err := ParseAcks(s); err != nil {
			t.Errorf("ParseAcks(%q): %v", s, err)
		}
	}
	if _, idem, _ := ParseAcks("all"); !idem {
		t.Error("acks=all should keep idempotent writes")
	}
	if _, idem, _ := ParseAcks("1"); idem {
		t.Error("acks=1 must disable idempotent writes")
	}
	if _, _, err := ParseAcks("2"); err == nil {
		t.Error("ParseAcks(2) succeeded")
	}
	for _, s := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		if _, err := ParseCompression(s); err != nil {
			t.Errorf("ParseCompression(%q): %v", s, err)
		}
	}
	if _, err := ParseCompression("brotli"); err == nil {
		t.Error("ParseCompression(brotli) succeeded")
	}
}
