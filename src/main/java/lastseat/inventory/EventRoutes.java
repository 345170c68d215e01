package lastseat.inventory;

import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import lastseat.config.EventsConfig;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import lastseat.web.Bodies;
import lastseat.web.Json;
import lastseat.web.Problem;
import lastseat.web.Reply;
import lastseat.web.Text;

/** {@code /events}: create one ({@code POST}), read one with its seats ({@code GET /{id}}). */
public final class EventRoutes implements HttpService {
    private final Inventory inventory;
    private final EventsConfig config;

    public EventRoutes(Inventory inventory, EventsConfig config) {
        this.inventory = inventory;
        this.config = config;
    }

    @Override
    public void routing(HttpRules rules) {
        rules.post("/", this::create)
             .get("/{id}", this::find);
    }

    private void create(ServerRequest request, ServerResponse response) {
        Bodies.requireJson(request);
        NewEvent event = Json.read(Bodies.read(request, config.maxBodyBytes()), NewEvent.class);
        switch (inventory.create(event.valid(config.maxCapacity()))) {
            case Inventory.Creation.Created created ->
                    Reply.json(201, created.event(), "/events/" + created.event().id()).send(response);
            case Inventory.Creation.Exists exists ->
                    throw new Problem(409, "event-exists", "Event exists", "An event with id " + exists.id() + " exists already");
        }
    }

    private void find(ServerRequest request, ServerResponse response) {
        String id = request.path().pathParameters().get("id");
        if (!Text.storable(id, 64)) {
            // No event can have it, and PostgreSQL would refuse to even look (a NUL): not found, without echoing it.
            throw Problem.notFound("unknown-event", "There is no event with that id");
        }
        EventView event = inventory.find(id, true)
                .orElseThrow(() -> Problem.notFound("unknown-event", "There is no event " + id));
        Reply.json(200, event, null).send(response);
    }
}
