package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// row is the median of every measure over the rounds of one partition count.
type row struct {
	result
	Rounds int
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// group is the rounds of one build at one partition count.
type group struct {
	build      string
	partitions int
}

// medians groups results by build and partition count (in the order first
// seen) and takes the median of each measure.
func medians(rs []result) []row {
	var order []group
	by := map[group][]result{}
	for _, r := range rs {
		k := group{r.Build, r.Partitions}
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], r)
	}
	var rows []row
	for _, k := range order {
		g := by[k]
		med := func(f func(result) float64) float64 {
			xs := make([]float64, len(g))
			for i, r := range g {
				xs[i] = f(r)
			}
			return median(xs)
		}
		rows = append(rows, row{Rounds: len(g), result: result{
			Build:                 k.build,
			Partitions:            k.partitions,
			CreateSeconds:         med(func(r result) float64 { return r.CreateSeconds }),
			CreatePerTopicSeconds: med(func(r result) float64 { return r.CreatePerTopicSeconds }),
			IdleRSSMB:             med(func(r result) float64 { return r.IdleRSSMB }),
			IdleCPUPercent:        med(func(r result) float64 { return r.IdleCPUPercent }),
			OpenFiles:             int(med(func(r result) float64 { return float64(r.OpenFiles) })),
			Threads:               int64(med(func(r result) float64 { return float64(r.Threads) })),
			ProduceMBps:           med(func(r result) float64 { return r.ProduceMBps }),
			StopSeconds:           med(func(r result) float64 { return r.StopSeconds }),
			RestartSeconds:        med(func(r result) float64 { return r.RestartSeconds }),
			KillSeconds:           med(func(r result) float64 { return r.KillSeconds }),
		}})
	}
	return rows
}

func markdownTable(rows []row) string {
	var b strings.Builder
	b.WriteString("| build | partitions | rounds | idle RSS (MB) | idle CPU (% of a core) | open files | produce (MB/s) | SIGTERM stop (s) | ready after restart (s) | ready after SIGKILL (s) | create (s) | create per topic at the end (s) |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f | %.2f | %d | %.1f | %.2f | %.2f | %.2f | %.1f | %.3f |\n",
			r.Build, r.Partitions, r.Rounds, r.IdleRSSMB, r.IdleCPUPercent, r.OpenFiles, r.ProduceMBps,
			r.StopSeconds, r.RestartSeconds, r.KillSeconds, r.CreateSeconds, r.CreatePerTopicSeconds)
	}
	return b.String()
}

// ratioTable divides the "new" build's medians by the "base" build's, per
// partition count.
func ratioTable(rows []row) string {
	base := map[int]row{}
	for _, r := range ofBuild(rows, "base") {
		base[r.Partitions] = r
	}
	ratio := func(a, b float64) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	var b strings.Builder
	b.WriteString("| partitions | new / base: idle RSS | idle CPU | SIGTERM stop | ready after restart | ready after SIGKILL | create | create per topic at the end |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range ofBuild(rows, "new") {
		o, ok := base[n.Partitions]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", n.Partitions,
			ratio(n.IdleRSSMB, o.IdleRSSMB), ratio(n.IdleCPUPercent, o.IdleCPUPercent),
			ratio(n.StopSeconds, o.StopSeconds), ratio(n.RestartSeconds, o.RestartSeconds),
			ratio(n.KillSeconds, o.KillSeconds), ratio(n.CreateSeconds, o.CreateSeconds),
			ratio(n.CreatePerTopicSeconds, o.CreatePerTopicSeconds))
	}
	return b.String()
}

// ofBuild returns the rows of one build.
func ofBuild(rows []row, build string) []row {
	var out []row
	for _, r := range rows {
		if r.Build == build {
			out = append(out, r)
		}
	}
	return out
}

// panel is one small chart: a measure against the partition count.
type panel struct {
	title  string
	target float64 // drawn as a dashed line at 10,000 partitions' target; 0: none
	series []series
}

type series struct {
	name  string
	color string
	value func(row) float64
}

// chart draws one panel per measure, the partition count on a log axis, as SVG.
func chart(rows []row) string {
	panels := []panel{
		{title: "idle RSS (MB)", target: 512, series: []series{{"RSS", "#1f77b4", func(r row) float64 { return r.IdleRSSMB }}}},
		{title: "idle CPU (% of a core)", target: 2, series: []series{{"CPU", "#1f77b4", func(r row) float64 { return r.IdleCPUPercent }}}},
		{title: "seconds", target: 10, series: []series{
			{"ready after restart", "#1f77b4", func(r row) float64 { return r.RestartSeconds }},
			{"ready after SIGKILL", "#d62728", func(r row) float64 { return r.KillSeconds }},
			{"SIGTERM stop", "#2ca02c", func(r row) float64 { return r.StopSeconds }},
		}},
		{title: "produce (MB/s)", series: []series{{"produce", "#1f77b4", func(r row) float64 { return r.ProduceMBps }}}},
		{title: "create: seconds per topic of 100 at the end", series: []series{{"create", "#1f77b4", func(r row) float64 { return r.CreatePerTopicSeconds }}}},
	}
	const w, h, pad = 360, 240, 48
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", 2*w, (len(panels)+1)/2*h)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	for i, p := range panels {
		x0, y0 := float64(i%2*w), float64(i/2*h)
		drawPanel(&b, p, rows, x0, y0, w, h, pad)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func drawPanel(b *strings.Builder, p panel, rows []row, x0, y0, w, h, pad float64) {
	if len(rows) == 0 {
		return
	}
	lo, hi := math.Log10(float64(rows[0].Partitions)), math.Log10(float64(rows[0].Partitions))
	top := p.target
	for _, r := range rows {
		lo, hi = min(lo, math.Log10(float64(r.Partitions))), max(hi, math.Log10(float64(r.Partitions)))
		for _, s := range p.series {
			top = max(top, s.value(r))
		}
	}
	if hi == lo {
		hi = lo + 1
	}
	top = max(top*1.1, 1e-9)
	px := func(n int) float64 { return x0 + pad + (math.Log10(float64(n))-lo)/(hi-lo)*(w-1.5*pad) }
	py := func(v float64) float64 { return y0 + h - pad + -v/top*(h-1.7*pad) }
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-weight="bold">%s</text>`+"\n", x0+pad, y0+18, p.title)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", px(rows[0].Partitions), py(0), x0+w-pad/2, py(0))
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0+pad, py(0), x0+pad, py(top))
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%.3g</text>`+"\n", x0+pad-4, py(top)+4, top)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">0</text>`+"\n", x0+pad-4, py(0)+4)
	for _, r := range rows {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", px(r.Partitions), py(0)+14, r.Partitions)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">partitions (log scale)</text>`+"\n", x0+w/2, y0+h-pad+28)
	if p.target > 0 {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="gray" stroke-dasharray="4 3"/>`+"\n", x0+pad, py(p.target), x0+w-pad/2, py(p.target))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="gray" text-anchor="end">target %g</text>`+"\n", x0+w-pad/2, py(p.target)-3, p.target)
	}
	for i, s := range p.series {
		var pts []string
		for _, r := range rows {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(r.Partitions), py(s.value(r))))
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`+"\n", px(r.Partitions), py(s.value(r)), s.color)
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s"/>`+"\n", strings.Join(pts, " "), s.color)
		if len(p.series) > 1 {
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="%s">%s</text>`+"\n", x0+pad+8, y0+34+float64(i)*13, s.color, s.name)
		}
	}
}
