package main

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

func TestMediansTableAndChart(t *testing.T) {
	rs := []result{
		{Partitions: 100, Round: 1, IdleRSSMB: 40, RestartSeconds: 3, ProduceMBps: 100},
		{Partitions: 100, Round: 2, IdleRSSMB: 50, RestartSeconds: 1, ProduceMBps: 120},
		{Partitions: 100, Round: 3, IdleRSSMB: 45, RestartSeconds: 2, ProduceMBps: 90},
		{Partitions: 1000, Round: 1, IdleRSSMB: 60, IdleCPUPercent: 1.5, KillSeconds: 4},
		{Partitions: 1000, Round: 2, IdleRSSMB: 70, IdleCPUPercent: 0.5, KillSeconds: 6},
	}
	rows := medians(rs)
	if len(rows) != 2 || rows[0].Partitions != 100 || rows[1].Partitions != 1000 {
		t.Fatalf("rows: %+v", rows)
	}
	if r := rows[0]; r.Rounds != 3 || r.IdleRSSMB != 45 || r.RestartSeconds != 2 || r.ProduceMBps != 100 {
		t.Errorf("100 partitions: %+v", r)
	}
	if r := rows[1]; r.Rounds != 2 || r.IdleRSSMB != 65 || r.IdleCPUPercent != 1 || r.KillSeconds != 5 {
		t.Errorf("1000 partitions (even count: mean of the middle two): %+v", r)
	}
	table := markdownTable(rows)
	if !strings.Contains(table, "|  | 100 | 3 | 45 | 0.00 |") || !strings.Contains(table, "|  | 1000 | 2 | 65 | 1.00 |") {
		t.Errorf("table:\n%s", table)
	}
	svg := chart(rows)
	d := xml.NewDecoder(strings.NewReader(svg))
	polylines := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	if polylines != 7 { // RSS, CPU, three times, produce, create per topic
		t.Errorf("%d polylines, want 7", polylines)
	}
	if strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") {
		t.Errorf("chart has NaN or Inf coordinates:\n%s", svg)
	}
}

func TestParseCounts(t *testing.T) {
	if got, err := parseCounts("100, 1000,5000"); err != nil || len(got) != 3 || got[2] != 5000 {
		t.Errorf("parseCounts: %v %v", got, err)
	}
	for _, bad := range []string{"", "0", "x", "100,-1"} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q): no error", bad)
		}
	}
}

func TestRatioTable(t *testing.T) {
	rs := []result{
		{Build: "base", Partitions: 1000, RestartSeconds: 4, CreatePerTopicSeconds: 0.5},
		{Build: "new", Partitions: 1000, RestartSeconds: 3, CreatePerTopicSeconds: 0.25},
		{Build: "new", Partitions: 5000, RestartSeconds: 3},
	}
	rows := medians(rs)
	if len(rows) != 3 || len(ofBuild(rows, "new")) != 2 {
		t.Fatalf("rows: %+v", rows)
	}
	table := ratioTable(rows)
	if !strings.Contains(table, "| 1000 | - | - | - | 0.75 | - | - | 0.50 |") {
		t.Errorf("ratio table:\n%s", table)
	}
	if strings.Contains(table, "| 5000 |") {
		t.Errorf("ratio table has a count without a baseline:\n%s", table)
	}
}
