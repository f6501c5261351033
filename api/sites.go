package api

import (
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/workspaces"
)

// SitePath is where published workspaces' sites are on the API's host: /w/{subdomain}/.
const SitePath = "/w"

// siteCSP is the Content-Security-Policy of a published workspace's files. The sandbox (without
// allow-same-origin) runs the page in an opaque origin: its scripts run, but they are no
// script of the API's origin, so they can neither read the API's answers nor use cookies or
// storage of the host the site is served from, whatever its visitor is signed in to there. The
// rest holds what the page loads to the site itself (inline styles and scripts allowed, as a
// static site's are), no plugins, and no framing by other sites.
const siteCSP = "sandbox allow-scripts allow-forms allow-popups; default-src 'self'; script-src 'self' 'unsafe-inline'; " +
	"style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; media-src 'self'; " +
	"object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'"

// siteURL is where the site of a workspace published at sub is: its subdomain of the public
// domain, else its path on the API's host.
func (s *server) siteURL(c *gin.Context, sub string) string {
	if s.publicDomain != "" {
		return "https://" + sub + "." + s.publicDomain + "/"
	}
	return s.baseURL(c) + SitePath + "/" + sub + "/"
}

// publication is a workspace as the publish calls answer it: with its site's URL.
func (s *server) publication(c *gin.Context, w workspaces.Workspace) gin.H {
	out := gin.H{"workspace": w, "subdomain": w.Subdomain, "published": w.Subdomain != "", "url": nil}
	if w.Subdomain != "" {
		out["url"] = s.siteURL(c, w.Subdomain)
	}
	return out
}

func (s *server) suggestSubdomain(c *gin.Context) (any, error) {
	_, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	sub, err := s.workspaces.Suggest(c, w)
	if err != nil {
		return nil, err
	}
	return gin.H{"subdomain": sub, "url": s.siteURL(c, sub), "available": true}, nil
}

func (s *server) publishWorkspace(c *gin.Context) (any, error) {
	req, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	w, err = s.workspaces.Publish(c, w, req.Subdomain)
	if err != nil {
		return nil, err
	}
	return s.publication(c, w), nil
}

func (s *server) unpublishWorkspace(c *gin.Context) (any, error) {
	_, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	w, err = s.workspaces.Unpublish(c, w)
	if err != nil {
		return nil, err
	}
	return s.publication(c, w), nil
}

// domainAnswer is a workspace as the custom domain calls answer it: with its domain's name,
// status, records and problem (null when it has none), and the site's URL there once active.
func domainAnswer(w workspaces.Workspace) gin.H {
	out := gin.H{"workspace": w, "custom_domain": nil, "status": nil, "records": []workspaces.DomainRecord{}, "problem": nil, "url": nil}
	if d := w.Domain; d != nil {
		out["custom_domain"], out["status"], out["records"], out["problem"] = d.Name, d.Status, d.Records, d.Problem
		if d.Status == workspaces.DomainActive {
			out["url"] = "https://" + d.Name + "/"
		}
	}
	return out
}

func (s *server) addWorkspaceDomain(c *gin.Context) (any, error) {
	req, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	w, err = s.workspaces.AddDomain(c, w, req.CustomDomain)
	if err != nil {
		return nil, err
	}
	return domainAnswer(w), nil
}

func (s *server) removeWorkspaceDomain(c *gin.Context) (any, error) {
	_, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	w, err = s.workspaces.RemoveDomain(c, w)
	if err != nil {
		return nil, err
	}
	return domainAnswer(w), nil
}

// checkWorkspaceDomain looks the domain's records up and answers what was found.
func (s *server) checkWorkspaceDomain(c *gin.Context) (any, error) {
	_, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	w, err = s.workspaces.CheckDomain(c, w)
	if err != nil {
		return nil, err
	}
	return domainAnswer(w), nil
}

// workspaceDomainInfo answers the domain as last checked, without a look-up.
func (s *server) workspaceDomainInfo(c *gin.Context) (any, error) {
	_, w, err := s.workspaceOf(c)
	if err != nil {
		return nil, err
	}
	return domainAnswer(w), nil
}

// siteRoot sends /w/{subdomain} to /w/{subdomain}/, where the site's relative links resolve.
func (s *server) siteRoot(c *gin.Context) {
	c.Redirect(http.StatusMovedPermanently, SitePath+"/"+c.Param("subdomain")+"/")
}

// site serves a file of the workspace published at the path's subdomain.
func (s *server) site(c *gin.Context) {
	w, err := s.workspaces.Published(c, c.Param("subdomain"))
	s.serveSite(c, w, err, c.Param("path"))
}

// siteHost serves the site of the workspace a request's host names (a subdomain of the public
// domain, or another host that is a workspace's active custom domain), at every path; a host
// that names none goes on to the routes (an agent's page, the API).
func (s *server) siteHost(c *gin.Context) {
	if s.publicDomain == "" || (c.Request.Method != http.MethodGet && c.Request.Method != http.MethodHead) {
		return
	}
	host := c.Request.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	sub, ok := strings.CutSuffix(host, "."+s.publicDomain)
	var w workspaces.Workspace
	var err error
	switch {
	case ok && !strings.Contains(sub, "."):
		w, err = s.workspaces.Published(c, sub)
	case ok || host == s.publicDomain || net.ParseIP(host) != nil || !strings.Contains(host, ".") || slices.Contains(s.ownHosts, host):
		return
	default:
		w, err = s.workspaces.AtDomain(c, host)
	}
	if err != nil {
		if apperr.As(err).Kind != apperr.NotFound {
			httpx.Fail(c, err)
		}
		return
	}
	s.serveSite(c, w, nil, c.Request.URL.Path)
	c.Abort()
}

// serveSite answers the file at p of the published workspace w (or err, looking it up): its
// bytes with the type of its extension, never sniffed, under siteCSP; a 404 for a site or file
// there is not.
func (s *server) serveSite(c *gin.Context, w workspaces.Workspace, err error, p string) {
	h := c.Writer.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", siteCSP)
	var f workspaces.File
	folder := false
	if err == nil {
		f, folder, err = s.workspaces.Site(c, w, p)
	}
	switch {
	case folder:
		c.Redirect(http.StatusMovedPermanently, strings.TrimSuffix(c.Request.URL.Path, "/")+"/")
		return
	case err != nil && apperr.As(err).Kind == apperr.NotFound:
		c.Data(http.StatusNotFound, "text/plain; charset=utf-8", []byte("Not found.\n"))
		return
	case err != nil:
		httpx.Fail(c, err)
		return
	}
	h.Set("Content-Type", f.ContentType)
	h.Set("Cache-Control", "public, max-age=60")
	h.Set("Last-Modified", f.UpdatedAt.UTC().Format(http.TimeFormat))
	c.Status(http.StatusOK)
	if c.Request.Method == http.MethodHead {
		return
	}
	if err := f.WriteContent(c.Writer); err != nil {
		httpx.Logger(c).Warn("site file cut short", "subdomain", w.Subdomain, "err", err)
	}
}
