package api

import (
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// The OpenAPI document is valid and documents every route the server serves.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	doc, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(t.Context()); err != nil {
		t.Fatalf("invalid document: %v", err)
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	// With an admin token, so that the routes it guards are served too.
	(&server{adminToken: "t"}).routes(r)
	for _, route := range r.Routes() {
		path := route.Path
		for _, part := range strings.Split(path, "/") {
			if strings.HasPrefix(part, ":") || strings.HasPrefix(part, "*") {
				path = strings.Replace(path, part, "{"+part[1:]+"}", 1)
			}
		}
		item := doc.Paths.Find(path)
		if item == nil || item.GetOperation(route.Method) == nil {
			t.Errorf("%s %s is not in the OpenAPI document", route.Method, path)
		}
	}
}
