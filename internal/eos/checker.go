// Package eos checks exactly-once processing the way Jepsen checks Kafka's
// transactions: over a history of transactional writes (each with the outcome its
// producer saw) and read_committed reads, it finds aborted reads (a record of an
// aborted transaction was read), lost committed writes (a record of a committed
// transaction was never read), duplicates (one input was read twice in the output),
// missing inputs, and transactions read in part (atomicity). It also runs the
// consume-transform-produce pipeline whose histories it checks (pipeline.go).
package eos

import (
	"fmt"
	"sort"
	"strings"
)

// Outcome is what a transaction's producer learnt of it.
type Outcome int

const (
	Committed Outcome = iota // EndTransaction(commit) succeeded
	Aborted                  // the producer aborted it
	Unknown                  // ending it failed: either is allowed, but all or nothing
)

// Txn is one transaction of the history: its id and the records it wrote.
type Txn struct {
	ID      string
	Records []Record
	Outcome Outcome
}

// Record is an output record: the input it was made from and the transaction that
// wrote it.
type Record struct {
	Input string
	Txn   string
}

// String is how a record is written as a Kafka value: input "@" txn.
func (r Record) String() string { return r.Input + "@" + r.Txn }

// ParseRecord reads a value written by Record.String.
func ParseRecord(v string) (Record, error) {
	i := strings.LastIndexByte(v, '@')
	if i < 0 {
		return Record{}, fmt.Errorf("eos: value %q has no transaction", v)
	}
	return Record{Input: v[:i], Txn: v[i+1:]}, nil
}

// Result lists the anomalies found; Ok reports none.
type Result struct {
	AbortedReads   []Record // read, but written by an aborted transaction
	LostWrites     []Record // written by a committed transaction, never read
	Duplicates     []string // inputs read more than once
	Missing        []string // inputs never read
	PartialTxns    []string // transactions of unknown outcome read in part
	UnknownRecords []Record // read, but written by no transaction of the history
	Reads          int
}

// Ok reports whether the history has no anomaly.
func (r *Result) Ok() bool {
	return len(r.AbortedReads)+len(r.LostWrites)+len(r.Duplicates)+len(r.Missing)+len(r.PartialTxns)+len(r.UnknownRecords) == 0
}

func (r *Result) String() string {
	if r.Ok() {
		return fmt.Sprintf("ok: %d reads", r.Reads)
	}
	first := func(n int, s any) string { return fmt.Sprintf("%d (first %v)", n, s) }
	var parts []string
	add := func(what string, n int, s any) {
		if n > 0 {
			parts = append(parts, what+" "+first(n, s))
		}
	}
	head := func(rs []Record) any {
		if len(rs) > 0 {
			return rs[0]
		}
		return nil
	}
	headS := func(ss []string) any {
		if len(ss) > 0 {
			return ss[0]
		}
		return nil
	}
	add("aborted reads", len(r.AbortedReads), head(r.AbortedReads))
	add("lost committed writes", len(r.LostWrites), head(r.LostWrites))
	add("duplicates", len(r.Duplicates), headS(r.Duplicates))
	add("missing inputs", len(r.Missing), headS(r.Missing))
	add("partial transactions", len(r.PartialTxns), headS(r.PartialTxns))
	add("records of no transaction", len(r.UnknownRecords), head(r.UnknownRecords))
	return strings.Join(parts, "; ")
}

// Check checks a history: the transactions written, the records read (every
// read_committed read of the output, start to end), and the inputs that must each be
// in the output exactly once (nil: no such expectation).
func Check(txns []Txn, reads []Record, inputs []string) *Result {
	res := &Result{Reads: len(reads)}
	byID := make(map[string]*Txn, len(txns))
	for i := range txns {
		byID[txns[i].ID] = &txns[i]
	}
	seen := make(map[Record]int, len(reads))
	perInput := make(map[string]int, len(reads))
	perTxn := make(map[string]int)
	for _, r := range reads {
		seen[r]++
		perInput[r.Input]++
		t := byID[r.Txn]
		switch {
		case t == nil:
			res.UnknownRecords = append(res.UnknownRecords, r)
		case t.Outcome == Aborted:
			res.AbortedReads = append(res.AbortedReads, r)
		}
		perTxn[r.Txn]++
	}
	for _, t := range txns {
		switch t.Outcome {
		case Committed:
			for _, r := range t.Records {
				if seen[r] == 0 {
					res.LostWrites = append(res.LostWrites, r)
				}
			}
		case Unknown:
			if n := perTxn[t.ID]; n > 0 && n != len(t.Records) {
				res.PartialTxns = append(res.PartialTxns, t.ID)
			}
		}
	}
	for in, n := range perInput {
		if n > 1 {
			res.Duplicates = append(res.Duplicates, in)
		}
	}
	for _, in := range inputs {
		if perInput[in] == 0 {
			res.Missing = append(res.Missing, in)
		}
	}
	sort.Strings(res.Duplicates)
	sort.Strings(res.Missing)
	sort.Strings(res.PartialTxns)
	return res
}
