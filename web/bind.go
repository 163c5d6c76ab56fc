package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain"
)

// BindJSON decodes the request body into v. A body that is not one JSON
// value gives 400 INVALID_JSON; a value of the wrong type for a field gives
// 400 VALIDATION_ERROR naming the field; an oversized body gives 413.
func BindJSON(c echo.Context, v any) error {
	dec := json.NewDecoder(c.Request().Body)
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return jsonError(err)
		}
		return domain.Errorf(domain.CodeInvalidJSON, "request body must hold a single JSON value")
	}
	return nil
}

func jsonError(err error) error {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return err // body limit
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return domain.Invalid(map[string]string{typeErr.Field: fmt.Sprintf("must be a %s", jsonKind(typeErr.Type.Kind().String()))})
	}
	if errors.Is(err, io.EOF) {
		return domain.Errorf(domain.CodeInvalidJSON, "request body is empty; expected a JSON object")
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "json: ")
	return domain.Errorf(domain.CodeInvalidJSON, "request body is not valid JSON: %s", msg)
}

func jsonKind(kind string) string {
	switch kind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "whole number"
	case "float32", "float64":
		return "number"
	case "slice", "array":
		return "list"
	case "map", "struct":
		return "object"
	}
	return kind
}
