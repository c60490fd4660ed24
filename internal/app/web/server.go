package web

import (
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/sessionlog/sessionlog/handle"
)

//go:embed assets
var assets embed.FS

// TokenCookie is the cookie that carries the token after the first visit.
const TokenCookie = "logtool_serve_token"

// Store is what the server reads sessions through: any handle.Store (the
// live view follows a session with package follow, a name is resolved
// with handle.Resolve). The server opens sessions ReadOnly only; serve
// gives it a file store over a read-only file system.
type Store = handle.Store

// Option configures a Server.
type Option func(*Server)

// WithToken sets the token every request must carry (default: 128 random
// bits, hex).
func WithToken(token string) Option { return func(s *Server) { s.token = token } }

// WithLogger sets where request failures are logged (default: nowhere).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithPageEvents sets how many events a session page shows at once
// (default 400): the last ones first, older ones a page back.
func WithPageEvents(n int) Option {
	return func(s *Server) {
		if n > 0 {
			s.pageEvents = n
		}
	}
}

// WithListPage sets how many sessions the list shows at once (default 100).
func WithListPage(n int) Option {
	return func(s *Server) {
		if n > 0 {
			s.listPage = n
		}
	}
}

// WithClock sets the clock of the replay answer: the time of the events
// that close an open turn in memory (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(s *Server) {
		if now != nil {
			s.now = now
		}
	}
}

// WithFollowEvery sets how often the live view looks for new events
// (default 200 ms, as tail -f).
func WithFollowEvery(d time.Duration) Option {
	return func(s *Server) {
		if d > 0 {
			s.followEvery = d
		}
	}
}

// Server serves one store. Build it with New, serve Handler.
type Server struct {
	store       Store
	now         func() time.Time
	token       string
	hosts       map[string]bool
	anyIPPort   string // bound to an unspecified address: any IP literal with this port is a valid Host
	log         *slog.Logger
	pageEvents  int
	listPage    int
	followEvery time.Duration
	pages       *template.Template
	static      fs.FS
}

// New returns a server of store bound at addr (the listener's address,
// host:port): the Host header of every request must name it (loopback
// aliases of a loopback address count too).
func New(store Store, addr string, opts ...Option) (*Server, error) {
	s := &Server{
		store:       store,
		now:         time.Now,
		log:         slog.New(slog.DiscardHandler),
		pageEvents:  400,
		listPage:    100,
		followEvery: 200 * time.Millisecond,
		hosts:       map[string]bool{},
	}
	for _, o := range opts {
		o(s)
	}
	if s.token == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		s.token = hex.EncodeToString(b)
	}
	if err := s.allowHosts(addr); err != nil {
		return nil, err
	}
	t, err := parsePages()
	if err != nil {
		return nil, err
	}
	s.pages = t
	s.static, err = fs.Sub(assets, "assets/static")
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Token returns the token requests must carry.
func (s *Server) Token() string { return s.token }

func (s *Server) allowHosts(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	s.hosts[strings.ToLower(addr)] = true
	ip := net.ParseIP(host)
	switch {
	case ip != nil && ip.IsLoopback():
		for _, h := range []string{"localhost", "127.0.0.1", "[::1]"} {
			s.hosts[h+":"+port] = true
		}
	case ip != nil && ip.IsUnspecified():
		s.anyIPPort = port
	}
	return nil
}

// hostAllowed reports whether a request's Host names this server: a name
// that is not the bound address would let a rebound DNS name reach it.
func (s *Server) hostAllowed(h string) bool {
	h = strings.ToLower(h)
	if s.hosts[h] {
		return true
	}
	if s.anyIPPort == "" {
		return false
	}
	host, port, err := net.SplitHostPort(h)
	return err == nil && port == s.anyIPPort && net.ParseIP(strings.Trim(host, "[]")) != nil
}

// Handler returns the server's handler: every route behind the checks.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.handleList)
	mux.HandleFunc("GET /s/{id}", s.withID(s.handleSession))
	mux.HandleFunc("GET /s/{id}/live", s.withID(s.handleLive))
	mux.HandleFunc("GET /s/{id}/events", s.withID(s.handleEvents))
	mux.HandleFunc("GET /s/{id}/verify", s.withID(s.handleVerifyPage))
	mux.HandleFunc("GET /diff", s.handleDiff)
	mux.HandleFunc("GET /api/ls", s.handleAPILs)
	mux.HandleFunc("GET /api/tree", s.handleAPITree)
	mux.HandleFunc("GET /api/stat/{id}", s.withID(s.handleAPIStat))
	mux.HandleFunc("GET /api/verify/{id}", s.withID(s.handleAPIVerify))
	mux.HandleFunc("GET /api/replay/{id}", s.withID(s.handleAPIReplay))
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(s.static)))
	return s.guard(mux)
}

// guard checks what every request must pass before any handler runs: the
// method (read-only), the Host, the token; and sets the security headers.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "read-only: only GET and HEAD are served", http.StatusMethodNotAllowed)
			return
		}
		if !s.hostAllowed(r.Host) {
			http.Error(w, "Host does not name this server", http.StatusMisdirectedRequest)
			return
		}
		if !s.authorized(w, r) {
			http.Error(w, "missing or wrong token: open the URL logtool serve printed", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized checks the token of the URL (then kept in a cookie), of the
// cookie, or of an Authorization: Bearer header.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if t := r.URL.Query().Get("token"); t != "" {
		if !s.tokenIs(t) {
			return false
		}
		http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		return true
	}
	if c, err := r.Cookie(TokenCookie); err == nil {
		return s.tokenIs(c.Value)
	}
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return s.tokenIs(a)
	}
	return false
}

func (s *Server) tokenIs(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) == 1
}
