package api

import (
	_ "embed"
	"encoding/json"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gin-gonic/gin"
)

//go:embed openapi.yaml
var openapiYAML []byte

// OpenAPI returns the parsed OpenAPI document of the API.
func OpenAPI() (*openapi3.T, error) {
	return openapi3.NewLoader().LoadFromData(openapiYAML)
}

var openapiJSON = mustOpenAPIJSON()

func mustOpenAPIJSON() []byte {
	doc, err := OpenAPI()
	if err != nil {
		panic("api/openapi.yaml: " + err.Error())
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic("api/openapi.yaml: " + err.Error())
	}
	return b
}

func (s *server) openapi(c *gin.Context) {
	c.Data(http.StatusOK, "application/json", openapiJSON)
}
