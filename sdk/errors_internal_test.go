package wager

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

// Player protection's refusals come back typed, with what a program
// needs to wait or stop: the limit and when it resets, when an exclusion
// ends, the country; each is still an *APIError.
func TestProtectionRefusalsAreTyped(t *testing.T) {
	answer := func(status int, body string) error {
		return apiError(&http.Response{StatusCode: status, Header: http.Header{}}, []byte(body))
	}
	err := answer(409, `{"code":"LIMIT_EXCEEDED","message":"your daily loss limit of 5 USDC is reached","limit":"lossMinor.day","resetsAt":"2026-11-26T14:05:00Z"}`)
	var limit *LimitExceededError
	if !errors.As(err, &limit) || limit.Limit != "lossMinor.day" || limit.ResetsAt == nil ||
		!limit.ResetsAt.Equal(time.Date(2026, 11, 26, 14, 5, 0, 0, time.UTC)) {
		t.Errorf("LIMIT_EXCEEDED: %#v", err)
	}
	err = answer(409, `{"code":"LIMIT_EXCEEDED","message":"your maximum stake is 1 USDC","limit":"stakeMaxMinor","resetsAt":null}`)
	if !errors.As(err, &limit) || limit.Limit != "stakeMaxMinor" || limit.ResetsAt != nil {
		t.Errorf("LIMIT_EXCEEDED without a reset: %#v", err)
	}
	err = answer(403, `{"code":"SELF_EXCLUDED","message":"you are taking a time-out","until":"2026-11-27T10:00:00Z","kind":"timeout"}`)
	var excluded *SelfExcludedError
	if !errors.As(err, &excluded) || excluded.Until == nil || excluded.Kind != "timeout" {
		t.Errorf("SELF_EXCLUDED: %#v", err)
	}
	err = answer(403, `{"code":"SELF_EXCLUDED","message":"for good","until":null,"kind":"self-exclusion"}`)
	if !errors.As(err, &excluded) || excluded.Until != nil {
		t.Errorf("a permanent SELF_EXCLUDED: %#v", err)
	}
	var age *AgeUnconfirmedError
	if err := answer(403, `{"code":"AGE_UNCONFIRMED","message":"confirm your age"}`); !errors.As(err, &age) || age.Underage {
		t.Errorf("AGE_UNCONFIRMED: %#v", err)
	}
	if err := answer(403, `{"code":"UNDERAGE","message":"too young"}`); !errors.As(err, &age) || !age.Underage {
		t.Errorf("UNDERAGE: %#v", err)
	}
	var region *RegionRestrictedError
	err = answer(403, `{"code":"REGION_RESTRICTED","message":"not here","country":"US"}`)
	if !errors.As(err, &region) || region.Country != "US" {
		t.Errorf("REGION_RESTRICTED: %#v", err)
	}
	var api *APIError
	if !errors.As(err, &api) || api.Status != 403 || api.Code != "REGION_RESTRICTED" {
		t.Errorf("the typed refusal is not an *APIError too: %#v", err)
	}
	var poor *InsufficientFundsError
	err = answer(409, `{"code":"INSUFFICIENT_FUNDS","message":"the entry fee is 0.10 USDC","neededMinor":100000,"availableMinor":2500}`)
	if !errors.As(err, &poor) || poor.NeededMinor != 100000 || poor.AvailableMinor != 2500 || !errors.As(err, &api) {
		t.Errorf("INSUFFICIENT_FUNDS: %#v", err)
	}
	if err := answer(409, `{"code":"CONFLICT","message":"busy"}`); errors.As(err, &limit) || !errors.As(err, &api) {
		t.Errorf("another 409 is a plain *APIError: %#v", err)
	}
}
