import Foundation
import Gateway
import Runtime
import Testing

/// Which peers a route names as its callers, decided without sockets.
struct CallerRuleTests {
    static func unix(uid: UInt32, gid: UInt32) -> RequestPeer {
        RequestPeer(address: "unix", credentials: PeerCredentials(pid: 42, uid: uid, gid: gid))
    }

    @Test func aUnixPeerIsAdmittedByItsUserOrItsGroup() {
        let rule = CallerRule(uids: [1000], gids: [50], networks: [CallerRule.Network("127.0.0.1")!])
        #expect(rule.admits(Self.unix(uid: 1000, gid: 1000)))
        #expect(rule.admits(Self.unix(uid: 33, gid: 50)))
        #expect(!rule.admits(Self.unix(uid: 33, gid: 33)))
        #expect(!rule.admits(Self.unix(uid: 0, gid: 0)), "root is a caller like any other: named, or refused")
        let member = RequestPeer(address: "unix", credentials: PeerCredentials(pid: 42, uid: 33, gid: 33, groups: [33, 50]))
        #expect(rule.admits(member), "a supplementary group counts like the effective one")
    }

    @Test(
        arguments: [
            ("10.0.0.0/8", "10.200.3.4:5000", true), ("10.0.0.0/8", "11.0.0.1:80", false),
            ("127.0.0.1", "127.0.0.1:1", true), ("127.0.0.1", "127.0.0.2:1", false),
            ("192.168.1.0/23", "192.168.0.9:1", true), ("192.168.1.0/23", "192.168.2.1:1", false),
            ("0.0.0.0/0", "8.8.8.8:53", true),
            ("fd00::/8", "[fd12::1]:443", true), ("fd00::/8", "[fe80::1]:443", false), ("::1", "[::1]:8080", true),
            ("127.0.0.0/8", "[::ffff:127.0.0.1]:9", true), ("::ffff:10.0.0.0/104", "10.1.1.1:1", true),
            ("10.0.0.0/8", "unix", false), ("::/0", "10.0.0.1:1", false),
        ] as [(String, String, Bool)])
    func aTCPPeerIsAdmittedByItsAddress(network: String, peer: String, admitted: Bool) throws {
        let rule = CallerRule(uids: [0], gids: [0], networks: [try #require(CallerRule.Network(network))])
        #expect(rule.admits(RequestPeer(address: peer)) == admitted, "\(network) \(peer)")
    }

    @Test func aRuleOfOneKindNeverAdmitsAPeerOfTheOther() {
        #expect(!CallerRule(uids: [0], gids: [0], networks: []).admits(RequestPeer(address: "127.0.0.1:1")))
        #expect(!CallerRule(uids: [], gids: [], networks: [CallerRule.Network("0.0.0.0/0")!]).admits(Self.unix(uid: 0, gid: 0)))
    }

    @Test(arguments: [
        "", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/+8", "::/129", "10.0.0", "example.com", "10.0.0.0/8/8",
    ])
    func aMalformedNetworkIsRefused(text: String) {
        #expect(CallerRule.Network(text) == nil, "\(text)")
    }

    @Test func configuredCallersResolveNamesAndRefuseWhatNamesNobody() throws {
        func error(_ callers: [String: Any]) -> String? {
            GatewayConfigurationTests.error {
                var routes = $0["routes"] as! [[String: Any]]
                routes[0]["callers"] = callers
                $0["routes"] = routes
            }
        }
        #expect(
            error(["users": ["root"], "groups": ["root"], "uids": [1000], "gids": [1000], "addresses": ["10.0.0.0/8"]]) == nil)
        #expect(error(["users": ["no-such-user-authgate"]])?.hasPrefix("routes[0].callers.users[0]") == true)
        #expect(error(["groups": ["no-such-group-authgate"]])?.hasPrefix("routes[0].callers.groups[0]") == true)
        #expect(error(["addresses": ["10.0.0.0/33"]])?.hasPrefix("routes[0].callers.addresses[0]") == true)
        #expect(error([:])?.hasPrefix("routes[0].callers names no caller") == true)
        #expect(error(["uids": [-1]]) != nil, "an id is a non-negative number")
        let c = try GatewayConfigurationTests.load {
            var routes = $0["routes"] as! [[String: Any]]
            routes[0]["callers"] = ["users": ["root"], "addresses": ["127.0.0.1"]]
            $0["routes"] = routes
        }
        let rule = try #require(c.proxyRoutes[0].callers)
        #expect(rule.uids == [0])
        #expect(rule.admits(RequestPeer(address: "127.0.0.1:4000")))
    }
}
