package console_test

// A headless Debian chromium driven over the DevTools protocol (chromedp): the
// console's pages as a browser runs them, with every console error, uncaught
// exception and JavaScript dialog recorded so a test can fail on them.

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browser is one headless chromium tab.
type browser struct {
	t   *testing.T
	ctx context.Context
	mu  struct {
		sync.Mutex
		problems []string // console errors, exceptions, dialogs
	}
}

// startBrowser starts chromium (Debian's package, installed by
// scripts/test-deps.sh) for the test. There is no skip: without chromium the
// test fails.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the browser tests need Debian's chromium: run scripts/test-deps.sh as root (or apt-get install chromium): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 900), chromedp.Flag("hide-scrollbars", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	b := &browser{t: t, ctx: ctx}
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	err = chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			b.problem("exception: %s", ev.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				b.problem("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				b.problem("log: %s (%s)", ev.Entry.Text, ev.Entry.URL)
			}
		case *page.EventJavascriptDialogOpening:
			b.problem("a %s dialog opened: %q", ev.Type, ev.Message)
			go func() { _, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{}) }()
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("enable the browser log: %v", err)
	}
	return b
}

func (b *browser) problem(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.problems = append(b.mu.problems, fmt.Sprintf(format, args...))
}

// checkClean fails the test if the browser reported anything since the last check.
func (b *browser) checkClean(where string) {
	b.t.Helper()
	b.mu.Lock()
	problems := b.mu.problems
	b.mu.problems = nil
	b.mu.Unlock()
	for _, p := range problems {
		b.t.Errorf("%s: %s", where, p)
	}
}

// open loads url and waits for its main element.
func (b *browser) open(url string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady("main")); err != nil {
		b.t.Fatalf("open %s: %v", url, err)
	}
}

// eval evaluates a JavaScript expression in b's page.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// screenshot returns a PNG of the whole page.
func (b *browser) screenshot() []byte {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	return png
}
