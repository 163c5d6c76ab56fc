// Package contract holds the integrators' contract tests: clients and
// checkers that nobody here wrote, pinned in package.json and go.mod, run
// against the whole server. Redocly lints the OpenAPI document, oapi-codegen
// generates a strict server from it that must compile, a client generated
// by ogen (package oas, `make generate`) decodes every answer of a tour of
// the API, openapi-typescript's types check a client script, the official
// MCP TypeScript client lists and calls the MCP tools over stdio and
// streamable HTTP, and every WebSocket frame the tests receive validates
// against the AsyncAPI document.
package contract
