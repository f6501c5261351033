// Package paging holds the page/per_page rules every list endpoint shares.
package paging

import "github.com/agentplane/agentplane/shared/kit/apperr"

// Defaults and bounds of page and per_page.
const (
	DefaultPage    = 1
	DefaultPerPage = 10
	MaxPerPage     = 100
	// MaxPage bounds the skip so a query never scans without limit.
	MaxPage = 100000
)

// Page is a validated page request.
type Page struct {
	Page    int
	PerPage int
}

// New validates page and per_page.
func New(page, perPage int) (Page, error) {
	var p apperr.Problems
	if page < 1 || page > MaxPage {
		p.Add("page", "must be between 1 and %d", MaxPage)
	}
	if perPage < 1 || perPage > MaxPerPage {
		p.Add("per_page", "must be between 1 and %d", MaxPerPage)
	}
	return Page{Page: page, PerPage: perPage}, p.Err()
}

// Skip is the number of items before this page.
func (p Page) Skip() int64 { return int64(p.Page-1) * int64(p.PerPage) }

// Pagination is the `pagination` object of list responses.
type Pagination struct {
	Page       int `json:"page"`
	PerPage    int `json:"per_page"`
	Total      int `json:"total"`
	TotalPages int `json:"total_pages"`
}

// Of describes page p of a list of total items.
func (p Page) Of(total int) Pagination {
	return Pagination{Page: p.Page, PerPage: p.PerPage, Total: total, TotalPages: (total + p.PerPage - 1) / p.PerPage}
}
