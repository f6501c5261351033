package workflows_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/workflows"
)

// The catalog's required params are exactly the ones the validator requires.
func TestRequiredParamsMatchTheValidator(t *testing.T) {
	full := map[string]map[string]any{
		workflows.ActionWebhook:     {"url": "https://example.com/hook", "timeout_seconds": 5.0},
		workflows.ActionSendMessage: {"message": "hi", "mode": "post"},
		workflows.ActionCreateDeal:  {"title": "Acme", "value": 10.0},
		workflows.ActionUpdateDeal:  {"deal_id": "d1", "title": "Acme"},
		workflows.ActionAddMemory:   {"title": "Note", "type": "text", "source": "x"},
	}
	for _, typ := range workflows.ActionTypes {
		for key := range full[typ] {
			params := map[string]any{}
			for k, v := range full[typ] {
				if k != key {
					params[k] = v
				}
			}
			d := workflows.Definition{TriggerType: workflows.TriggerTypeManual, Actions: []workflows.Action{{Type: typ, Params: params}}}
			err := d.Validate(nil)
			missing := err != nil && strings.Contains(err.Error(), "params."+key+": is required")
			if want := slices.Contains(workflows.RequiredParams[typ], key); missing != want {
				t.Errorf("%s without %s: required by the validator %v, by workflows.RequiredParams %v (%v)", typ, key, missing, want, err)
			}
		}
	}
}
