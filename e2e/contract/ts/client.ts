// A small client of the API written against the types openapi-typescript
// generates from /openapi.json (with its default options), type-checked
// by the contract tests: ids are strings, settings are per game type,
// free-form data takes any members, nullable fields say so.
import createClient from "openapi-fetch";
import type { components, paths } from "./api";

type Schemas = components["schemas"];

const api = createClient<paths>({
  baseUrl: "http://localhost:8080",
  headers: { Authorization: "Bearer <token>", "X-App-Id": "my-app", "X-SDK-Version": "1.0.0" },
});

export async function tour(gameId: string): Promise<string[]> {
  const seen: string[] = [];
  const settings: Schemas["GameSettings"] = { gameType: "rps", rounds: 3, roundSeconds: 20 };
  const lobby = await api.POST("/lobbies", { body: { gameType: "rps", stakeMinor: 0, settings } });
  if (lobby.data) {
    const id: string = lobby.data.id;
    await api.POST("/lobbies/{id}/join-queue", { params: { path: { id } } });
  }
  await api.POST("/challenges", { body: { toUsername: "rival", gameType: "connect4", stakeMinor: 0, settings: { gameType: "connect4", turnSeconds: 30 } } });

  const notifications = await api.GET("/notifications", { params: { query: { limit: 10, unread: true } } });
  for (const n of notifications.data ?? []) {
    const id: string = n.id;
    const data: Record<string, unknown> = n.data;
    seen.push(id, String(data["gameId"] ?? ""));
    await api.PATCH("/notifications/{id}/read", { params: { path: { id } } });
  }
  const last = notifications.data?.at(-1)?.id;
  if (last !== undefined) {
    await api.GET("/notifications", { params: { query: { before: last } } });
  }

  const feed = await api.GET("/activity/feed", { params: { query: { limit: 5 } } });
  const entryIds: string[] = (feed.data ?? []).map((e) => e.id);
  const history = await api.GET("/wallets/me/transactions", { params: { query: { limit: 20 } } });
  const next: string | undefined = history.data?.at(-1)?.id;
  if (next) {
    await api.GET("/wallets/me/transactions", { params: { query: { before: next } } });
  }
  const trades = await api.GET("/games/{id}/market/trades", { params: { path: { id: gameId }, query: { before: "7" } } });
  const tradeIds: string[] = (trades.data ?? []).map((t) => t.id);

  const market = await api.GET("/games/{id}/market", { params: { path: { id: gameId } } });
  const resolution: Record<string, number> | null = market.data ? market.data.resolution : null;
  if (resolution === null) {
    seen.push("not resolved yet");
  }
  const game = await api.GET("/games/{id}", { params: { path: { id: gameId }, header: { "If-None-Match": '"v1"' } } });
  const gameSettings: Schemas["GameSettings"] | undefined = game.data?.settings;
  seen.push(...entryIds, ...tradeIds, JSON.stringify(gameSettings));
  return seen;
}
