package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"wager/domain/chat"
	"wager/web"
)

// Chat serves game chat and direct messages.
type Chat struct {
	Chat *chat.Service
}

// Routes registers game chat, direct messages and blocks.
func (h *Chat) Routes(r Router) {
	paging := []web.Param{web.PageLimit,
		web.PageBefore("a message id: only older ones (the last id of the previous page)")}
	r.JSON(http.MethodPost, "/chat/:type/:id/messages", h.sendChat, web.Op{Tag: "chat", Auth: web.AuthRequired,
		Status: http.StatusCreated, Summary: "Send a message to a game's chat (type game, id the game) or to a user (type dm, id the user)",
		Description: "1 to 500 characters after control characters (except newlines) and surrounding spaces are removed; stored as typed, not HTML-escaped. " +
			"Anyone signed in may post in an active game's chat; the role is player or spectator. Game messages reach the room as game:chat:message, " +
			"direct messages reach both users' sockets as the notice chat:dm. 403 FORBIDDEN when either user blocked the other; " +
			"409 GAME_NOT_ACTIVE; 429 RATE_LIMITED (more than 5 messages in 10 seconds) with Retry-After.",
		Request: ChatRequest{}, Response: chat.Message{},
		Errors: []int{http.StatusForbidden, http.StatusNotFound, http.StatusConflict, http.StatusTooManyRequests}})
	r.JSON(http.MethodGet, "/chat/:type/:id/messages", h.chatHistory, web.Op{Tag: "chat", Auth: web.AuthRequired,
		Summary:     "Chat history, newest first",
		Description: "Any signed-in user may read the chat of an existing game, finished or not. For dm, id is the other user; reading marks the conversation read.",
		Response:    []chat.Message{}, Query: paging, Errors: []int{http.StatusBadRequest, http.StatusNotFound}})
	r.JSON(http.MethodGet, "/chat/dm/threads", h.chatThreads, web.Op{Tag: "chat", Auth: web.AuthRequired,
		Summary: "Your direct-message conversations, most recent first, with unread counts", Response: []chat.Thread{},
		Query: []web.Param{web.PageLimit,
			web.PageBefore("lastMessage.id of the previous page's last thread")}})
	r.JSON(http.MethodPost, "/users/:id/block", h.blockUser(true), web.Op{Tag: "chat", Auth: web.AuthRequired,
		Summary: "Block a user: no direct messages either way", Response: BlockState{},
		Errors: []int{http.StatusBadRequest, http.StatusNotFound}})
	r.JSON(http.MethodDelete, "/users/:id/block", h.blockUser(false), web.Op{Tag: "chat", Auth: web.AuthRequired,
		Summary: "Lift your block of a user", Response: BlockState{}, Errors: []int{http.StatusBadRequest, http.StatusNotFound}})
}

// ChatRequest is the body of POST /chat/:type/:id/messages.
type ChatRequest struct {
	Text string `json:"text" minLength:"1" maxLength:"500" doc:"1 to 500 characters"`
}

func (h *Chat) sendChat(c echo.Context) error {
	if err := chat.CheckContextType(c.Param("type")); err != nil {
		return err
	}
	var req ChatRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	msg, err := h.Chat.Send(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("type"), c.Param("id"), req.Text)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, msg)
}

func (h *Chat) chatHistory(c echo.Context) error {
	if err := chat.CheckContextType(c.Param("type")); err != nil {
		return err
	}
	limit, before, err := PageParams(c)
	if err != nil {
		return err
	}
	msgs, err := h.Chat.History(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("type"), c.Param("id"), limit, before)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, msgs)
}

func (h *Chat) chatThreads(c echo.Context) error {
	limit, before, err := PageParams(c)
	if err != nil {
		return err
	}
	threads, err := h.Chat.Threads(c.Request().Context(), web.IdentityOf(c).UserID, limit, before)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, threads)
}

// BlockState answers the block routes.
type BlockState struct {
	UserID  string `json:"userId"`
	Blocked bool   `json:"blocked" doc:"whether you now block this user"`
}

func (h *Chat) blockUser(block bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		change := h.Chat.Unblock
		if block {
			change = h.Chat.Block
		}
		if err := change(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id")); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, BlockState{UserID: c.Param("id"), Blocked: block})
	}
}
