package console

// Logins and sessions. A login checks a SCRAM user's password (Admin.Authenticate),
// or a page is loaded with the node's HTTP credentials (bearer token or client
// certificate: an admin), and a session cookie is set: HttpOnly, SameSite=Strict, Secure when the page came
// over TLS. Sessions live in this node's memory (a login holds on the node it was
// made on, until it expires or the node restarts). Each session has a CSRF token
// that every write action's form carries; a write without a session, without
// admin rights or without the token is refused with 403. With the ACL authorizer,
// a page shows only the topics and groups the user may DESCRIBE, records only
// where it may READ, and each write needs the operation Kafka would check.

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"skiff/acl"
	"skiff/auth"
)

const (
	sessionCookie = "skiff_console"
	sessionTTL    = 8 * time.Hour
	// maxSessions bounds the memory logins take (about 200 bytes each).
	maxSessions = 10000
)

type session struct {
	User    string
	Admin   bool
	CSRF    string
	expires time.Time
}

type sessions struct {
	delays *auth.FailureDelays
	mu     struct {
		sync.Mutex
		m map[string]*session
	}
}

func newSessions() *sessions {
	s := &sessions{delays: auth.NewFailureDelays(0)}
	s.mu.m = map[string]*session{}
	return s
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// start creates a session and returns its cookie value.
func (s *sessions) start(user string, admin bool) string {
	token, _ := s.create(user, admin)
	return token
}

func (s *sessions) create(user string, admin bool) (string, *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for k, v := range s.mu.m {
		if now.After(v.expires) {
			delete(s.mu.m, k)
		}
	}
	if len(s.mu.m) >= maxSessions {
		for k := range s.mu.m { // drop one: a flood of logins must not grow memory
			delete(s.mu.m, k)
			break
		}
	}
	token := randomToken()
	v := &session{User: user, Admin: admin, CSRF: randomToken(), expires: now.Add(sessionTTL)}
	s.mu.m[token] = v
	return token, v
}

// withHTTPAdmin starts an admin session for a request without one that carries
// the node's HTTP credentials (Admin.HTTPAdmin), sets its cookie, and returns the
// request with the session in its context; other requests come back unchanged.
// The session's forms carry a CSRF token as every other's: a browser sends a
// client certificate to any page that asks, as it sends cookies.
func (c *Console) withHTTPAdmin(w http.ResponseWriter, r *http.Request) *http.Request {
	if c.admin == nil || c.auth.of(r) != nil {
		return r
	}
	name, ok := c.admin.HTTPAdmin(r)
	if !ok {
		return r
	}
	token, s := c.auth.create(name, true)
	setSessionCookie(w, r, token)
	return r.WithContext(context.WithValue(r.Context(), sessionKey{}, s))
}

func setSessionCookie(w http.ResponseWriter, r *http.Request, token string) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(sessionTTL.Seconds())})
}

// sessionKey is where a session started for a request's HTTP credentials sits
// in its context.
type sessionKey struct{}

// of returns the session of r, or nil.
func (s *sessions) of(r *http.Request) *session {
	if v, ok := r.Context().Value(sessionKey{}).(*session); ok {
		return v
	}
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.mu.m[ck.Value]
	if v == nil || time.Now().After(v.expires) {
		return nil
	}
	return v
}

func (s *sessions) end(r *http.Request) {
	if ck, err := r.Cookie(sessionCookie); err == nil {
		s.mu.Lock()
		delete(s.mu.m, ck.Value)
		s.mu.Unlock()
	}
}

// authView is what a page shows of the session: who, and the token its forms carry.
type authView struct {
	User  string
	Admin bool
	CSRF  string
	// Login: the console has logins (an Admin is configured).
	Login bool
}

func (c *Console) authView(r *http.Request) authView {
	v := authView{Login: c.admin != nil}
	if s := c.auth.of(r); s != nil {
		v.User, v.Admin, v.CSRF = s.User, s.Admin, s.CSRF
	}
	return v
}

// needLogin: the cluster authenticates clients and r has no session.
func (c *Console) needLogin(r *http.Request) bool {
	return c.admin != nil && c.admin.AuthRequired() && c.auth.of(r) == nil
}

type loginData struct {
	Next, User, Err string
	Required        bool
}

func (c *Console) loginForm(w http.ResponseWriter, r *http.Request) {
	c.setHeaders(w)
	if c.admin == nil {
		c.renderError(w, r, http.StatusNotFound, "Not Found", "This console has no logins: it is read-only.")
		return
	}
	c.render(w, r, http.StatusOK, rendered{page: "login", title: "Sign in", data: loginData{Next: safeNext(r.URL.Query().Get("next")), Required: c.admin.AuthRequired()}})
}

// login checks the form's user and password; a failure is answered after a delay
// that doubles with each failure from the same address (auth.FailureDelays).
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	c.setHeaders(w)
	if c.admin == nil {
		c.renderError(w, r, http.StatusNotFound, "Not Found", "This console has no logins: it is read-only.")
		return
	}
	if !sameOrigin(r) {
		c.renderError(w, r, http.StatusForbidden, "Forbidden", "A login from another site is refused.")
		return
	}
	user, password, next := r.PostFormValue("user"), r.PostFormValue("password"), safeNext(r.PostFormValue("next"))
	ok, admin, err := c.admin.Authenticate(r.Context(), user, password)
	if err != nil || !ok {
		host, _, _ := strings.Cut(r.RemoteAddr, ":")
		time.Sleep(c.auth.delays.Failed(host)) // slows password guessing; a good login is never delayed
		msg := "Wrong user name or password."
		if err != nil {
			msg = "The password could not be checked: " + err.Error()
		}
		c.render(w, r, http.StatusUnauthorized, rendered{page: "login", title: "Sign in", data: loginData{Next: next, User: user, Err: msg, Required: c.admin.AuthRequired()}})
		return
	}
	setSessionCookie(w, r, c.auth.start(user, admin))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if s := c.auth.of(r); s == nil || !c.csrfOK(r, s) {
		http.Error(w, "sign out needs the page's token", http.StatusForbidden)
		return
	}
	c.auth.end(r)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// safeNext keeps a redirect target on this site: a path, nothing else.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || next == "" || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(next, "//") {
		return "/"
	}
	return u.RequestURI()
}

// sameOrigin: the browser says the request comes from this site's own pages
// (or says nothing, as non-browser clients do; those have no cookie to abuse).
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		return err == nil && u.Host == r.Host
	}
	return true
}

// csrfOK: r is a same-origin form post carrying the session's token.
func (c *Console) csrfOK(r *http.Request, s *session) bool {
	got := r.PostFormValue("csrf")
	return sameOrigin(r) && got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRF)) == 1
}

// may says whether r's user may do op on the resource (t, name) by the cluster's
// ACLs (Admin.Allowed), for the address the request came from. Without an Admin,
// or with one that requires no login and no session, reads are open.
func (c *Console) may(r *http.Request, op acl.Operation, t acl.ResourceType, name string) bool {
	if c.admin == nil {
		return true
	}
	s := c.auth.of(r)
	if s == nil {
		return !c.admin.AuthRequired()
	}
	addr, _ := netip.ParseAddrPort(r.RemoteAddr)
	return c.admin.Allowed(s.User, addr.Addr(), op, t, name)
}

// forbidden is the error of a page the user may not see.
func forbidden(format string, args ...any) error {
	return &httpError{http.StatusForbidden, fmt.Sprintf(format, args...)}
}
