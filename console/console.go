package console

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config configures a Console.
type Config struct {
	// Source is the node the console reads.
	Source Source
	// Admin does the write actions and checks logins; nil: read-only, no login.
	Admin Admin
	// Logger: default slog.Default().
	Logger *slog.Logger
	// Step and Window shape the rate history: default DefaultStep, DefaultWindow.
	Step, Window time.Duration
	// Client asks the other nodes (GET /v1/console/...): default a client without
	// TLS.
	Client *http.Client
	// PeerTLS: the other nodes' HTTP ports speak TLS (https).
	PeerTLS bool
}

// Console serves the web console of one node.
type Console struct {
	src    Source
	admin  Admin
	auth   *sessions
	logger *slog.Logger
	hist   *History
	step   time.Duration
	client *http.Client
	scheme string // of the other nodes' HTTP ports
	pages  map[string]*template.Template

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// New returns a Console and starts its sampler (Close stops it).
func New(cfg Config) *Console {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Step <= 0 {
		cfg.Step = DefaultStep
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	scheme := "http"
	if cfg.PeerTLS {
		scheme = "https"
	}
	c := &Console{src: cfg.Source, admin: cfg.Admin, auth: newSessions(), scheme: scheme, logger: cfg.Logger, hist: NewHistory(cfg.Step, cfg.Window), step: cfg.Step,
		client: cfg.Client, pages: parsePages(), stop: make(chan struct{}), done: make(chan struct{})}
	go c.sampleLoop()
	return c
}

// Close stops the sampler. It is idempotent.
func (c *Console) Close() error {
	c.once.Do(func() { close(c.stop) })
	<-c.done
	return nil
}

// Register adds the pages (under /) and the internal API (under /v1/console/) to
// mux.
func (c *Console) Register(mux *http.ServeMux) {
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", cacheFor(http.FileServerFS(static))))
	mux.HandleFunc("GET /{$}", c.page(c.overview))
	mux.HandleFunc("GET /topics", c.page(c.topics))
	mux.HandleFunc("GET /topics/{topic}", c.page(c.topic))
	mux.HandleFunc("GET /topics/{topic}/messages", c.page(c.messages))
	mux.HandleFunc("GET /groups", c.page(c.groupList))
	mux.HandleFunc("GET /groups/{group}", c.page(c.group))
	mux.HandleFunc("GET /nodes/{id}", c.page(c.node))
	mux.HandleFunc("GET /login", c.loginForm)
	mux.HandleFunc("POST /login", c.login)
	mux.HandleFunc("POST /logout", c.logout)
	c.actionRoutes(mux)
	c.internalRoutes(mux)
}

func cacheFor(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=300")
		h.ServeHTTP(w, r)
	})
}

// sampleLoop samples the node's state every step, at multiples of step.
func (c *Console) sampleLoop() {
	defer close(c.done)
	for {
		now := time.Now()
		next := now.Truncate(c.step).Add(c.step)
		select {
		case <-c.stop:
			return
		case <-time.After(next.Sub(now)):
		}
		if !c.src.Started() {
			continue
		}
		c.sample()
	}
}

// sample takes one sample: the node's counters and replicas, and the lag of the
// groups it coordinates (log ends from its own replicas' high watermarks, a
// follower's at most a fetch behind its leader's, and from the leaders for
// partitions it has no replica of).
func (c *Console) sample() {
	ctx, cancel := context.WithTimeout(context.Background(), c.step)
	defer cancel()
	l := c.src.Local(ctx)
	groups := c.src.Groups()
	var lag map[string]int64
	if len(groups) > 0 {
		ends := map[tpKey]int64{}
		for _, r := range l.Replicas {
			ends[tpKey{r.Topic, r.Partition}] = r.HWM
		}
		var v *view
		lag = make(map[string]int64, len(groups))
		for _, g := range groups {
			var total int64
			for _, o := range g.Offsets {
				k := tpKey{o.Topic, o.Partition}
				end, ok := ends[k]
				if !ok {
					if v == nil {
						v = c.gather(ctx, Want{AllParts: true})
					}
					rep, led := v.leaders[k]
					if !led {
						continue // its leader did not answer: counted as no lag
					}
					end = rep.HWM
				}
				total += max(end-o.Offset, 0)
			}
			lag[g.Name] = total
		}
	}
	c.hist.Sample(time.Now(), l, lag)
}
