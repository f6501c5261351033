// Package inboxpage is the operators' door: the inbox's web page at /inbox and its files in web/.
// The page holds no secret: the operator signs in in the browser with its token (op_...), kept
// in the tab's sessionStorage, and the page speaks to the inbox's routes with it. api mounts its
// routes.
package inboxpage

import (
	"embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

//go:embed web
var web embed.FS

// Path is where the operators' page is.
const Path = "/inbox"

// policy lets the page run its own script and style only, speak to its own origin only, and be
// framed by no one.
const policy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"form-action 'none'; base-uri 'none'; frame-ancestors 'none'"

// Page serves the operators' page.
func Page(c *gin.Context) {
	c.Header("Content-Security-Policy", policy)
	c.Header("X-Frame-Options", "DENY")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Referrer-Policy", "no-referrer")
	c.Header("Cache-Control", "no-store")
	c.FileFromFS("web/page.html", http.FS(web))
}

// Asset serves a file of the page (its script, its style).
func Asset(name string) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Header("Cache-Control", "public, max-age=300")
		c.Header("X-Content-Type-Options", "nosniff")
		c.FileFromFS("web/"+name, http.FS(web))
	}
}
