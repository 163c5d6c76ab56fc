package support

import (
	"errors"
	"strings"
	"testing"

	"wager/domain"
)

func TestNewTicketClean(t *testing.T) {
	game := "7B4C5A3E-0000-4000-8000-000000000000"
	ok, err := NewTicket{Subject: " Stuck ", Message: "a\r\nb", GameID: &game}.Clean()
	if err != nil || ok.Subject != "Stuck" || ok.Message != "a\nb" || ok.Category != CategoryOther ||
		ok.GameID == nil || *ok.GameID != strings.ToLower(game) {
		t.Fatalf("clean: %+v, %v", ok, err)
	}
	for _, c := range []struct {
		name  string
		in    NewTicket
		field string
	}{
		{"empty subject", NewTicket{Message: "m"}, "subject"},
		{"long subject", NewTicket{Subject: strings.Repeat("é", MaxSubject+1), Message: "m"}, "subject"},
		{"subject on two lines", NewTicket{Subject: "a\nb", Message: "m"}, "subject"},
		{"empty message", NewTicket{Subject: "s", Message: " \n "}, "message"},
		{"long message", NewTicket{Subject: "s", Message: strings.Repeat("m", MaxText+1)}, "message"},
		{"isolate in message", NewTicket{Subject: "s", Message: "a\u2067b"}, "message"},
		{"category", NewTicket{Subject: "s", Message: "m", Category: "Other"}, "category"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.in.Clean()
			if err == nil || !strings.Contains(err.Error(), "VALIDATION_ERROR") {
				t.Fatalf("got %v, want a validation error", err)
			}
			if fields := fieldsOf(err); fields[c.field] == "" {
				t.Errorf("fields %v do not name %s", fields, c.field)
			}
		})
	}
	if got, err := CleanText(strings.Repeat("x", MaxText)); err != nil || len(got) != MaxText {
		t.Errorf("a text of exactly %d characters: %v", MaxText, err)
	}
	if _, err := ParseStatus("waiting"); err == nil {
		t.Error("status waiting was accepted")
	}
}

func fieldsOf(err error) map[string]string {
	var e *domain.Error
	if errors.As(err, &e) {
		return e.Fields
	}
	return nil
}
