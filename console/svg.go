package console

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Charts are drawn on the server as inline SVG: a line per series over a fixed
// time axis (the history window), NaN samples leaving gaps, the largest value and
// the window written on the axes. Labels are escaped; the SVG carries a role and
// a title for screen readers.

const (
	chartW, chartH = 320, 120
	padL, padB     = 64, 16
)

// chart draws a full chart of series (up to two, the second dashed colour) with a
// title for screen readers; unit formats the axis labels.
func chart(title string, unit func(float64) string, series ...[]float32) template.HTML {
	top := maxOf(series...)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s"><title>%s</title>`,
		chartW, chartH, template.HTMLEscapeString(title), template.HTMLEscapeString(title))
	plotW, plotH := float64(chartW-padL-4), float64(chartH-padB-6)
	for i := 0; i <= 2; i++ {
		y := 6 + plotH*float64(i)/2
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, padL, chartW-4, y, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-4, y+3, template.HTMLEscapeString(unit(top*float64(2-i)/2)))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">−15 min</text><text x="%d" y="%d" text-anchor="end">now</text>`, padL, chartH-3, chartW-4, chartH-3)
	for i, s := range series {
		class := "line"
		if i > 0 {
			class = "line2"
		}
		for _, seg := range polylines(s, float64(padL), 6, plotW, plotH, top) {
			fmt.Fprintf(&b, `<polyline class="%s" points="%s"/>`, class, seg)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// spark draws a small chart without axes.
func spark(title string, series ...[]float32) template.HTML {
	top := maxOf(series...)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="spark" viewBox="0 0 120 28" role="img" aria-label="%s"><title>%s</title>`,
		template.HTMLEscapeString(title), template.HTMLEscapeString(title))
	for i, s := range series {
		class := "line"
		if i > 0 {
			class = "line2"
		}
		for _, seg := range polylines(s, 1, 2, 118, 24, top) {
			fmt.Fprintf(&b, `<polyline class="%s" points="%s"/>`, class, seg)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func maxOf(series ...[]float32) float64 {
	top := 0.0
	for _, s := range series {
		for _, v := range s {
			if !math.IsNaN(float64(v)) {
				top = max(top, float64(v))
			}
		}
	}
	if top == 0 {
		return 1
	}
	return niceCeil(top)
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// polylines returns the point lists of s's runs without NaN.
func polylines(s []float32, x0, y0, w, h, top float64) []string {
	var out []string
	var cur strings.Builder
	n := len(s)
	for i, v := range s {
		if math.IsNaN(float64(v)) {
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
			continue
		}
		x := x0
		if n > 1 {
			x += w * float64(i) / float64(n-1)
		}
		y := y0 + h - h*math.Min(float64(v), top)/top
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		fmt.Fprintf(&cur, "%.1f,%.1f", x, y)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	// A single point draws nothing: repeat it so a run of one sample shows.
	for i, seg := range out {
		if !strings.Contains(seg, " ") {
			out[i] = seg + " " + seg
		}
	}
	return out
}

func bytesUnit(v float64) string { return formatBytes(int64(v)) + "/s" }

func countUnit(v float64) string {
	if v >= 1e6 {
		return fmt.Sprintf("%.1fM", v/1e6)
	}
	if v >= 1e4 {
		return fmt.Sprintf("%.0fk", v/1e3)
	}
	if v < 10 && v != math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return formatInt(int(v))
}
