package api

import (
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
)

// queryInt reads an optional integer query parameter; absent or empty is def.
func queryInt(c *gin.Context, name string, def int) (int, error) {
	v := strings.TrimSpace(c.Query(name))
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, apperr.Invalidf(name, "must be an integer")
	}
	return n, nil
}

// pageQuery reads page and per_page.
func pageQuery(c *gin.Context) (paging.Page, error) {
	page, err := queryInt(c, "page", paging.DefaultPage)
	if err != nil {
		return paging.Page{}, err
	}
	perPage, err := queryInt(c, "per_page", paging.DefaultPerPage)
	if err != nil {
		return paging.Page{}, err
	}
	return paging.New(page, perPage)
}
