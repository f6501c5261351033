package api

import "github.com/gin-gonic/gin"

// routes is the whole API surface at a glance.
func (s *server) routes(r *gin.Engine) {
	r.Use(s.requestID, s.accessLog, s.recover)
	r.NoRoute(s.notFound)
	r.NoMethod(s.methodNotAllowed)

	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	r.GET("/v1/openapi.json", s.openapi)

	admin := r.Group("/v1/admin", s.requireAdmin)
	admin.POST("/accounts", s.createAccount)

	v1 := r.Group("/v1", s.authenticate, s.rateLimited)
	v1.POST("/projects", s.createProject)
	v1.GET("/projects", s.listProjects)
	v1.GET("/projects/:project_id", s.readProject)
	v1.POST("/keys", s.createKey)
	v1.GET("/keys", s.listKeys)
	v1.DELETE("/keys/:key_id", s.revokeKey)
}
