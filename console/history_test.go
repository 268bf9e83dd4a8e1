package console

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// TestHistoryRates: rates come from differences between samples; a partition
// counts from its second sample as leader (no jump when leadership moves here);
// series travel as JSON with null for slots without a sample.
func TestHistoryRates(t *testing.T) {
	h := NewHistory(time.Second, 10*time.Second)
	t0 := time.UnixMilli(1_000_000)
	l := Local{BytesIn: 1000, Replicas: []Replica{{Topic: "a", Partition: 0, Leader: true, LogEnd: 100}}}
	h.Sample(t0, l, nil)
	l.BytesIn = 3000
	l.Replicas = []Replica{{Topic: "a", Partition: 0, Leader: true, LogEnd: 150}, {Topic: "a", Partition: 1, Leader: true, LogEnd: 5000}}
	h.Sample(t0.Add(2*time.Second), l, map[string]int64{"g": 7})
	r := h.Report(t0.Add(2*time.Second), Want{Node: true, Topics: []string{"a"}, Groups: []string{"g"}})
	if got := r.In[len(r.In)-1]; got != 1000 {
		t.Errorf("bytes in: %v/s, want 1000/s", got)
	}
	if got := r.Rates["a"]; got != 25 {
		t.Errorf("topic a: %v/s, want 25/s (partition 1 is new: it counts from its next sample)", got)
	}
	if got := r.Groups["g"][len(r.Groups["g"])-1]; got != 7 {
		t.Errorf("lag of g: %v, want 7", got)
	}
	if !math.IsNaN(float64(r.In[0])) {
		t.Errorf("the oldest slot holds %v, want no sample (NaN)", r.In[0])
	}
	body, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back HistoryReport
	if err := json.Unmarshal(body, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.In) != len(r.In) || !math.IsNaN(float64(back.In[0])) || back.In[len(back.In)-1] != 1000 {
		t.Errorf("after a JSON round trip: %v, want %v", back.In, r.In)
	}
}

// TestShow: values are shown as JSON, text or hex as asked, binary as hex, and
// big ones cut.
func TestShow(t *testing.T) {
	for _, tc := range []struct {
		in, format, want, as string
	}{
		{`{"a":1}`, formatAuto, "{\n  \"a\": 1\n}", formatJSON},
		{`{"a":1}`, formatText, `{"a":1}`, formatText},
		{"<b>hi</b>", formatAuto, "<b>hi</b>", formatText},
		{"\x00\x01ab", formatAuto, "00000000  00 01 61 62" + pad(38) + "..ab\n", formatHex},
		{"ab", formatHex, "00000000  61 62" + pad(44) + "ab\n", formatHex},
	} {
		got := show([]byte(tc.in), tc.format)
		if got.Text != tc.want || got.Format != tc.as {
			t.Errorf("show(%q, %s) = %q as %s, want %q as %s", tc.in, tc.format, got.Text, got.Format, tc.want, tc.as)
		}
	}
	big := show(make([]byte, maxShown+10), formatAuto)
	if big.Truncated != 10 || big.Format != formatHex {
		t.Errorf("a big binary value: %d bytes left out as %s, want 10 as hex", big.Truncated, big.Format)
	}
	if got := show(nil, formatAuto); got.Format != "null" {
		t.Errorf("a null value is shown as %s", got.Format)
	}
}

func pad(n int) string { return strings.Repeat(" ", n) }
