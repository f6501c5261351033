package api

import (
	httppprof "net/http/pprof"
	"runtime/pprof"
	"strings"

	"github.com/gin-gonic/gin"
)

// ProfilesPath is where the runtime profiles (net/http/pprof) are served, behind the admin token.
const ProfilesPath = "/debug/pprof"

// profiles serves net/http/pprof's handlers: the index and each named profile (heap, goroutine,
// allocs, block, mutex, threadcreate) by its Index, the others by their own handler; a name
// that is no profile is the API's 404.
func (s *server) profiles(c *gin.Context) {
	w, r := c.Writer, c.Request
	switch name := strings.TrimPrefix(c.Param("name"), "/"); name {
	case "":
		httppprof.Index(w, r)
	case "cmdline":
		httppprof.Cmdline(w, r)
	case "profile":
		httppprof.Profile(w, r)
	case "symbol":
		httppprof.Symbol(w, r)
	case "trace":
		httppprof.Trace(w, r)
	default:
		if pprof.Lookup(name) == nil {
			s.notFound(c)
			return
		}
		httppprof.Handler(name).ServeHTTP(w, r)
	}
}
