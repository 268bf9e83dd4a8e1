package console

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"skiff/cluster"
)

// pageNames are the templates of templates/, one page each.
var pageNames = []string{"overview", "topics", "topic", "groups", "group", "node", "messages", "login", "confirm"}

var funcs = template.FuncMap{
	"bytes":  formatBytes,
	"num":    formatInt,
	"rate":   formatRate,
	"ints":   formatInts,
	"path":   url.PathEscape,
	"source": sourceName,
}

// parsePages parses each page with the layout.
func parsePages() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		out[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}
	out["error"] = template.Must(template.New("error").Funcs(funcs).Parse(`{{define "content"}}{{template "error" .}}{{end}}`))
	template.Must(out["error"].ParseFS(templateFS, "templates/layout.html"))
	return out
}

// rendered is what a page handler returns.
type rendered struct {
	page    string // template name
	title   string
	section string // the nav entry it belongs to
	live    bool   // refresh its data-live figures
	data    any
}

// httpError is an error a page shows with its status.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return &httpError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

func badInput(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

type layoutData struct {
	Title, Section string
	NodeID         int32
	Live           bool
	RefreshMS      int64
	Auth           authView
	Data           any
}

// page wraps a page handler: a starting node answers 503, errors become an
// error page, and the page is rendered into a buffer first so that a template
// error is a 500 and not half a page.
func (c *Console) page(fn func(*http.Request) (rendered, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c.setHeaders(w)
		if !c.src.Started() {
			c.renderError(w, r, http.StatusServiceUnavailable, "Starting", "The node is starting; this page will answer once it serves.")
			return
		}
		r = c.withHTTPAdmin(w, r)
		if c.needLogin(r) {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		out, err := fn(r)
		if err != nil {
			c.renderFailure(w, r, err)
			return
		}
		c.render(w, r, http.StatusOK, out)
	}
}

// setHeaders sets the headers of every page: a content security policy that runs
// only the console's own script and style, and no caching.
func (c *Console) setHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// renderFailure shows err: an *httpError with its status, anything else as 500.
func (c *Console) renderFailure(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpError
	if errors.As(err, &he) {
		c.renderError(w, r, he.status, http.StatusText(he.status), he.msg)
		return
	}
	c.renderError(w, r, http.StatusInternalServerError, "Error", err.Error())
}

func (c *Console) renderError(w http.ResponseWriter, r *http.Request, status int, title, msg string) {
	c.render(w, r, status, rendered{page: "error", title: title, data: map[string]string{"Title": title, "Message": msg}})
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, out rendered) {
	var buf bytes.Buffer
	ld := layoutData{Title: out.title, Section: out.section, NodeID: c.src.NodeID(), Live: out.live, RefreshMS: c.step.Milliseconds(),
		Auth: c.authView(r), Data: out.data}
	if err := c.pages[out.page].ExecuteTemplate(&buf, "layout", ld); err != nil {
		c.logger.Error("console: render page", "page", out.page, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func formatBytes(n int64) string {
	const unit = 1024
	f := float64(n)
	if math.Abs(f) < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	i := 0
	for math.Abs(f) >= unit && i < 5 {
		f /= unit
		i++
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + []string{"", "KiB", "MiB", "GiB", "TiB", "PiB"}[i]
}

// formatInt groups thousands with commas.
func formatInt(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func formatRate(v float32) string {
	switch {
	case v != v: // NaN: no sample yet
		return "–"
	case v < 10:
		return strconv.FormatFloat(float64(v), 'f', 1, 32)
	}
	return formatInt(int(math.Round(float64(v))))
}

func formatInts(s []int32) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(int(v))
	}
	return strings.Join(parts, ", ")
}

// sourceName says where a topic config's value comes from, as Kafka names it.
func sourceName(s cluster.ConfigSource) string {
	switch s {
	case cluster.SourceTopic:
		return "topic"
	case cluster.SourceDynamicBroker:
		return "this broker (dynamic)"
	case cluster.SourceDynamicDefaultBroker:
		return "every broker (dynamic)"
	case cluster.SourceStaticBroker:
		return "broker setting"
	case cluster.SourceDefault:
		return "default"
	}
	return "unknown"
}

func nan32() float32 { return float32(math.NaN()) }
