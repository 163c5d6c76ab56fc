package contract_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/ogen-go/ogen/ogenerrors"

	"wager/e2e/contract/oas"
	wager "wager/sdk"
	"wager/sdk/api"
)

// credentials give the ogen client a signed-in SDK client's token.
type credentials struct{ c *wager.Client }

func (s credentials) Bearer(context.Context, oas.OperationName) (oas.Bearer, error) {
	token, _ := s.c.Token()
	return oas.Bearer{Token: token}, nil
}

func (credentials) AppId(context.Context, oas.OperationName) (oas.AppId, error) {
	return oas.AppId{APIKey: "contract-test"}, nil
}

func (credentials) Session(context.Context, oas.OperationName) (oas.Session, error) {
	return oas.Session{}, ogenerrors.ErrSkipClientSecurity
}

// TestOgenClientDecodesEveryAnswerOfATour: a client that ogen generated
// from the OpenAPI document (it decodes strictly: a null, a number or a
// member where the document says otherwise fails the whole answer) reads
// every kind of resource after the scene, as a player and as the
// spectator, and decodes each answer as the document's success type.
func TestOgenClientDecodesEveryAnswerOfATour(t *testing.T) {
	sc := play(t)
	ctx := context.Background()
	client := func(c *wager.Client) *oas.Client {
		o, err := oas.NewClient(sc.s.URL, credentials{c})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	first, watcher := client(sc.first), client(sc.watcher)

	// Some ids the tour follows, read with the SDK.
	ticket, err := sc.first.API.PostSupportWithResponse(ctx, nil, api.SupportNewTicket{Subject: "A question", Message: "How do rematches work?"})
	must(t, "open a ticket", err)
	_, err = sc.first.API.PostFriendsByUserIdWithResponse(ctx, sc.second.UserID(), nil)
	must(t, "ask a friend", err)

	type read struct {
		name string
		call func() (any, error)
	}
	var notificationID, historyBefore string
	reads := []read{
		{"GET /health", func() (any, error) { return first.GetHealth(ctx, oas.GetHealthParams{}) }},
		{"GET /version", func() (any, error) { return first.GetVersion(ctx, oas.GetVersionParams{}) }},
		{"GET /feature-flags", func() (any, error) { return first.GetFeatureFlags(ctx, oas.GetFeatureFlagsParams{}) }},
		{"GET /service_check_maintenance", func() (any, error) {
			return first.GetServiceCheckMaintenance(ctx, oas.GetServiceCheckMaintenanceParams{})
		}},
		{"GET /games/available", func() (any, error) { return first.GetGamesAvailable(ctx, oas.GetGamesAvailableParams{}) }},
		{"GET /games/metrics", func() (any, error) { return first.GetGamesMetrics(ctx, oas.GetGamesMetricsParams{}) }},
		{"GET /games/live", func() (any, error) { return first.GetGamesLive(ctx, oas.GetGamesLiveParams{}) }},
		{"GET /spectate/live-players", func() (any, error) { return first.GetSpectateLivePlayers(ctx, oas.GetSpectateLivePlayersParams{}) }},
		{"GET /lobbies", func() (any, error) { return first.GetLobbies(ctx, oas.GetLobbiesParams{}) }},
		{"GET /challenges", func() (any, error) { return first.GetChallenges(ctx, oas.GetChallengesParams{}) }},
		{"GET /games/{id} (completed)", func() (any, error) { return first.GetGamesById(ctx, oas.GetGamesByIdParams{ID: sc.staked}) }},
		{"GET /games/{id} (active)", func() (any, error) { return first.GetGamesById(ctx, oas.GetGamesByIdParams{ID: sc.free}) }},
		{"GET /games/{id}/state", func() (any, error) { return first.GetGamesByIdState(ctx, oas.GetGamesByIdStateParams{ID: sc.free}) }},
		{"GET /games/{id}/events", func() (any, error) { return first.GetGamesByIdEvents(ctx, oas.GetGamesByIdEventsParams{ID: sc.staked}) }},
		{"GET /games/{id}/market (resolved)", func() (any, error) {
			return first.GetGamesByIdMarket(ctx, oas.GetGamesByIdMarketParams{ID: sc.staked})
		}},
		{"GET /games/{id}/market (not resolved)", func() (any, error) {
			return first.GetGamesByIdMarket(ctx, oas.GetGamesByIdMarketParams{ID: sc.free})
		}},
		{"GET /games/{id}/market/trades", func() (any, error) {
			return first.GetGamesByIdMarketTrades(ctx, oas.GetGamesByIdMarketTradesParams{ID: sc.staked})
		}},
		{"GET /games/{id}/market/positions", func() (any, error) {
			return watcher.GetGamesByIdMarketPositions(ctx, oas.GetGamesByIdMarketPositionsParams{ID: sc.staked})
		}},
		{"GET /games/{id}/market/orders", func() (any, error) {
			return watcher.GetGamesByIdMarketOrders(ctx, oas.GetGamesByIdMarketOrdersParams{ID: sc.staked})
		}},
		{"GET /games/{id}/bets", func() (any, error) { return first.GetGamesByIdBets(ctx, oas.GetGamesByIdBetsParams{ID: sc.staked}) }},
		{"GET /games/{id}/pot", func() (any, error) { return first.GetGamesByIdPot(ctx, oas.GetGamesByIdPotParams{ID: sc.staked}) }},
		{"GET /games/{id}/donations", func() (any, error) {
			return first.GetGamesByIdDonations(ctx, oas.GetGamesByIdDonationsParams{ID: sc.staked})
		}},
		{"GET /games/{id}/rematch", func() (any, error) {
			return first.GetGamesByIdRematch(ctx, oas.GetGamesByIdRematchParams{ID: sc.staked})
		}},
		{"GET /chat/game/{id}/messages", func() (any, error) {
			return first.GetChatByTypeByIdMessages(ctx, oas.GetChatByTypeByIdMessagesParams{Type: "game", ID: sc.staked})
		}},
		{"GET /chat/dm/threads", func() (any, error) { return first.GetChatDmThreads(ctx, oas.GetChatDmThreadsParams{}) }},
		{"GET /users/me", func() (any, error) { return first.GetUsersMe(ctx, oas.GetUsersMeParams{}) }},
		{"GET /users/{id}", func() (any, error) { return first.GetUsersById(ctx, oas.GetUsersByIdParams{ID: sc.second.UserID()}) }},
		{"GET /usernames/{username}", func() (any, error) {
			me, err := first.GetUsersById(ctx, oas.GetUsersByIdParams{ID: sc.second.UserID()})
			if err != nil {
				return nil, err
			}
			return first.GetUsernamesByUsername(ctx, oas.GetUsernamesByUsernameParams{Username: me.(*oas.UserProfile).Username})
		}},
		{"GET /users/search", func() (any, error) { return first.GetUsersSearch(ctx, oas.GetUsersSearchParams{Username: "zz"}) }},
		{"GET /users/me/current-game", func() (any, error) { return first.GetUsersMeCurrentGame(ctx, oas.GetUsersMeCurrentGameParams{}) }},
		{"GET /users/{id}/current-game", func() (any, error) {
			return first.GetUsersByIdCurrentGame(ctx, oas.GetUsersByIdCurrentGameParams{ID: sc.watcher.UserID()})
		}},
		{"GET /users/{id}/ratings", func() (any, error) {
			return first.GetUsersByIdRatings(ctx, oas.GetUsersByIdRatingsParams{ID: sc.first.UserID()})
		}},
		{"GET /notifications", func() (any, error) {
			r, err := first.GetNotifications(ctx, oas.GetNotificationsParams{})
			if ok, _ := r.(*oas.GetNotificationsOKApplicationJSON); ok != nil && len(*ok) > 0 {
				notificationID = (*ok)[0].ID
			}
			return r, err
		}},
		{"PATCH /notifications/{id}/read", func() (any, error) {
			return first.PatchNotificationsByIdRead(ctx, oas.PatchNotificationsByIdReadParams{ID: notificationID})
		}},
		{"GET /notifications?before=", func() (any, error) {
			return first.GetNotifications(ctx, oas.GetNotificationsParams{Before: oas.NewOptString(notificationID)})
		}},
		{"GET /activity/feed", func() (any, error) { return first.GetActivityFeed(ctx, oas.GetActivityFeedParams{}) }},
		{"GET /achievements", func() (any, error) { return first.GetAchievements(ctx, oas.GetAchievementsParams{}) }},
		{"GET /achievements/me", func() (any, error) { return first.GetAchievementsMe(ctx, oas.GetAchievementsMeParams{}) }},
		{"GET /achievements/user/{id}", func() (any, error) {
			return first.GetAchievementsUserById(ctx, oas.GetAchievementsUserByIdParams{ID: sc.second.UserID()})
		}},
		{"GET /leaderboards/global", func() (any, error) { return first.GetLeaderboardsGlobal(ctx, oas.GetLeaderboardsGlobalParams{}) }},
		{"GET /leaderboards/game/{type}", func() (any, error) {
			return first.GetLeaderboardsGameByType(ctx, oas.GetLeaderboardsGameByTypeParams{Type: "rps"})
		}},
		{"GET /leaderboards/friends", func() (any, error) { return first.GetLeaderboardsFriends(ctx, oas.GetLeaderboardsFriendsParams{}) }},
		{"GET /friends/{userId}", func() (any, error) {
			return first.GetFriendsByUserId(ctx, oas.GetFriendsByUserIdParams{UserId: sc.first.UserID()})
		}},
		{"GET /friends/requests/incoming", func() (any, error) {
			return first.GetFriendsRequestsIncoming(ctx, oas.GetFriendsRequestsIncomingParams{})
		}},
		{"GET /wallets/me/balance", func() (any, error) { return first.GetWalletsMeBalance(ctx, oas.GetWalletsMeBalanceParams{}) }},
		{"GET /wallets/me/transactions", func() (any, error) {
			r, err := first.GetWalletsMeTransactions(ctx, oas.GetWalletsMeTransactionsParams{Limit: oas.NewOptInt64(2)})
			if page, _ := r.(*oas.ActivityPage); page != nil {
				historyBefore = page.NextBefore.Or("")
			}
			return r, err
		}},
		{"GET /wallets/me/transactions?before=", func() (any, error) {
			return first.GetWalletsMeTransactions(ctx, oas.GetWalletsMeTransactionsParams{Before: oas.NewOptString(historyBefore)})
		}},
		{"GET /referrals/me", func() (any, error) { return first.GetReferralsMe(ctx, oas.GetReferralsMeParams{}) }},
		{"GET /referrals/me/tree", func() (any, error) { return first.GetReferralsMeTree(ctx, oas.GetReferralsMeTreeParams{}) }},
		{"GET /referrals/me/rewards", func() (any, error) { return first.GetReferralsMeRewards(ctx, oas.GetReferralsMeRewardsParams{}) }},
		{"GET /support/me", func() (any, error) { return first.GetSupportMe(ctx, oas.GetSupportMeParams{}) }},
		{"GET /support/me/{id}", func() (any, error) {
			return first.GetSupportMeById(ctx, oas.GetSupportMeByIdParams{ID: ticket.JSON201.Id})
		}},
	}
	decoded := 0
	for _, r := range reads {
		res, err := r.call()
		switch {
		case err != nil:
			t.Errorf("%s: %v", r.name, err)
		case isErrorAnswer(res):
			t.Errorf("%s: an error answer %T %+v", r.name, res, res)
		default:
			decoded++
		}
	}
	t.Logf("ogen decoded %d of %d answers", decoded, len(reads))
	if notificationID == "" || historyBefore == "" {
		t.Errorf("the tour found no notification id (%q) or history cursor (%q) to follow", notificationID, historyBefore)
	}
}

// isErrorAnswer reports whether an ogen result is one of the document's
// error answers (each a type defined as the Error schema) rather than a
// success.
func isErrorAnswer(res any) bool {
	t := reflect.TypeOf(res)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && t.ConvertibleTo(reflect.TypeFor[oas.Error]())
}
