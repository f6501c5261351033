package store

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// A server shutting down or failing over answers with errors the same request will not get once
// it is over: they are the dependency being unavailable (503), not an internal error (500).
func TestServerErrorsOfAFailoverAreUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want apperr.Kind
	}{
		{"ShutdownInProgress", mongo.CommandError{Code: 91, Name: "ShutdownInProgress"}, apperr.Unavailable},
		{"InterruptedDueToReplStateChange", mongo.CommandError{Code: 11602}, apperr.Unavailable},
		{"NotWritablePrimary", mongo.WriteException{WriteConcernError: &mongo.WriteConcernError{Code: 10107}}, apperr.Unavailable},
		{"RetryableWriteLabel", mongo.CommandError{Code: 1, Labels: []string{"RetryableWriteError"}}, apperr.Unavailable},
		{"BadValue", mongo.CommandError{Code: 2, Name: "BadValue"}, apperr.Internal},
		{"Other", errors.New("boom"), apperr.Internal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := apperr.As(wrap(tc.err, "deal")).Kind; got != tc.want {
				t.Fatalf("kind %v, want %v", got, tc.want)
			}
		})
	}
}
