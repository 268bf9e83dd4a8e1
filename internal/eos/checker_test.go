package eos

import (
	"slices"
	"testing"
)

// TestCheckFindsEachAnomaly feeds the checker one history per anomaly Jepsen found
// in Kafka-compatible systems, and a clean one.
func TestCheckFindsEachAnomaly(t *testing.T) {
	r := func(in, txn string) Record { return Record{Input: in, Txn: txn} }
	txns := []Txn{
		{ID: "t1", Records: []Record{r("a", "t1"), r("b", "t1")}, Outcome: Committed},
		{ID: "t2", Records: []Record{r("c", "t2")}, Outcome: Aborted},
		{ID: "t3", Records: []Record{r("c", "t3")}, Outcome: Committed},
		{ID: "t4", Records: []Record{r("d", "t4"), r("e", "t4")}, Outcome: Unknown},
	}
	inputs := []string{"a", "b", "c", "d", "e"}
	clean := []Record{r("a", "t1"), r("b", "t1"), r("c", "t3"), r("d", "t4"), r("e", "t4")}
	if res := Check(txns, clean, inputs); !res.Ok() {
		t.Fatalf("clean history: %v", res)
	}
	// An unknown outcome may also be all-absent, if its inputs came again elsewhere.
	txns5 := append(slices.Clone(txns), Txn{ID: "t5", Records: []Record{r("d", "t5"), r("e", "t5")}, Outcome: Committed})
	if res := Check(txns5, []Record{r("a", "t1"), r("b", "t1"), r("c", "t3"), r("d", "t5"), r("e", "t5")}, inputs); !res.Ok() {
		t.Fatalf("unknown outcome absent: %v", res)
	}
	cases := []struct {
		name  string
		reads []Record
		check func(*Result) bool
	}{
		{"aborted read", append(slices.Clone(clean), r("c", "t2")), func(res *Result) bool {
			return len(res.AbortedReads) == 1 && slices.Equal(res.Duplicates, []string{"c"})
		}},
		{"lost committed write", clean[1:], func(res *Result) bool {
			return len(res.LostWrites) == 1 && slices.Equal(res.Missing, []string{"a"})
		}},
		{"duplicate", append(slices.Clone(clean), r("a", "t1")), func(res *Result) bool { return slices.Equal(res.Duplicates, []string{"a"}) }},
		{"partial transaction", clean[:4], func(res *Result) bool {
			return slices.Equal(res.PartialTxns, []string{"t4"}) && slices.Equal(res.Missing, []string{"e"})
		}},
		{"record of no transaction", append(slices.Clone(clean), r("z", "t9")), func(res *Result) bool { return len(res.UnknownRecords) == 1 }},
	}
	for _, c := range cases {
		res := Check(txns, c.reads, inputs)
		if res.Ok() || !c.check(res) {
			t.Errorf("%s: got %v (%+v)", c.name, res, res)
		}
	}
}

func TestParseRecord(t *testing.T) {
	in := Record{Input: "in@put", Txn: "s1-7"}
	got, err := ParseRecord(in.String())
	if err != nil || got != in {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if _, err := ParseRecord("none"); err == nil {
		t.Fatal("a value without a transaction parsed")
	}
}
