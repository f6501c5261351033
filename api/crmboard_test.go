package api_test

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
)

// column is what a client reads of a board's stage.
type column struct {
	name   string
	deals  []string
	count  float64
	values map[string]any
	pages  float64
}

func boardColumns(t *testing.T, board map[string]any) []column {
	t.Helper()
	var cols []column
	for _, s := range board["stages"].([]any) {
		st := s.(map[string]any)
		col := column{name: st["name"].(string), count: st["deal_count"].(float64), values: st["value_by_currency"].(map[string]any),
			pages: st["pagination"].(map[string]any)["total_pages"].(float64)}
		for _, d := range st["deals"].([]any) {
			col.deals = append(col.deals, d.(map[string]any)["title"].(string))
		}
		cols = append(cols, col)
	}
	return cols
}

func TestCRMBoard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.crmAPI(t)
	deal := func(c crmAPI, body map[string]any) {
		c.ok(t, "POST", "/v1/bot/crm/deals", body)
	}
	deal(c, map[string]any{"title": "A", "value": 100, "currency": "USD"})
	deal(c, map[string]any{"title": "B", "value": 200, "currency": "USD"})
	deal(c, map[string]any{"title": "C", "value": 50, "currency": "EUR"})
	deal(c, map[string]any{"title": "D", "value": 70, "currency": "USD", "stage": "Proposal"})
	deal(c, map[string]any{"title": "E", "value": 900, "currency": "USD", "status": "won"})
	// Another agent of the project: its deals are not on this agent's board.
	deal(b.crmAPI(t), map[string]any{"title": "Other agent's", "value": 5, "currency": "USD"})
	hiring := c.ok(t, "POST", "/v1/bot/crm/pipelines", map[string]any{"name": "Hiring",
		"stages": []any{map[string]any{"name": "Applied"}, map[string]any{"name": "Interview"}}})["pipeline"].(map[string]any)
	hiringID := hiring["uuid"].(string)
	deal(c, map[string]any{"title": "Ada", "value": 1, "currency": "GBP", "pipeline_id": hiringID, "stage": "Interview"})

	empty := map[string]any{}
	for _, tc := range []struct {
		name, query string
		pipeline    string
		total       float64
		want        []column
	}{
		{name: "default pipeline, first page of two", query: "&per_page=2", pipeline: "Sales", total: 5, want: []column{
			{name: "Lead", deals: []string{"A", "B"}, count: 3, values: map[string]any{"USD": float64(300), "EUR": float64(50)}, pages: 2},
			{name: "Qualified", count: 0, values: empty},
			{name: "Proposal", deals: []string{"D"}, count: 1, values: map[string]any{"USD": float64(70)}, pages: 1},
			{name: "Negotiation", count: 0, values: empty},
			{name: "Won", deals: []string{"E"}, count: 1, values: map[string]any{"USD": float64(900)}, pages: 1},
			{name: "Lost", count: 0, values: empty},
		}},
		{name: "second page: each stage's own", query: "&per_page=2&page=2", pipeline: "Sales", total: 5, want: []column{
			{name: "Lead", deals: []string{"C"}, count: 3, values: map[string]any{"USD": float64(300), "EUR": float64(50)}, pages: 2},
			{name: "Qualified", count: 0, values: empty},
			{name: "Proposal", count: 1, values: map[string]any{"USD": float64(70)}, pages: 1},
			{name: "Negotiation", count: 0, values: empty},
			{name: "Won", count: 1, values: map[string]any{"USD": float64(900)}, pages: 1},
			{name: "Lost", count: 0, values: empty},
		}},
		{name: "another pipeline", query: "&pipeline_id=" + hiringID, pipeline: "Hiring", total: 1, want: []column{
			{name: "Applied", count: 0, values: empty},
			{name: "Interview", deals: []string{"Ada"}, count: 1, values: map[string]any{"GBP": float64(1)}, pages: 1},
			{name: "Won", count: 0, values: empty},
			{name: "Lost", count: 0, values: empty},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/pipelines/board" + c.q() + tc.query, Key: b.key})
			expect(t, res, http.StatusOK, "")
			board := res.JSON(t)
			if board["pipeline"].(map[string]any)["name"] != tc.pipeline || board["total"] != tc.total {
				t.Fatalf("board of %v, total %v", board["pipeline"], board["total"])
			}
			if got := boardColumns(t, board); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("columns\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name, query string
		status      int
		code        string
	}{
		{name: "unknown pipeline", query: "&pipeline_id=nope", status: http.StatusNotFound, code: "pipeline_not_found"},
		{name: "per_page out of range", query: "&per_page=0", status: http.StatusUnprocessableEntity, code: "invalid_field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/pipelines/board" + c.q() + tc.query, Key: b.key}), tc.status, tc.code)
		})
	}
}
