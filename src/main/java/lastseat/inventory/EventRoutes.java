package lastseat.inventory;

import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import lastseat.web.Bodies;
import lastseat.web.Json;
import lastseat.web.Problem;
import lastseat.web.Reply;

/** {@code POST /events} and {@code GET /events/{id}}. */
public final class EventRoutes {
    private final Inventory inventory;
    private final int maxBodyBytes;

    public EventRoutes(Inventory inventory, int maxBodyBytes) {
        this.inventory = inventory;
        this.maxBodyBytes = maxBodyBytes;
    }

    public void register(HttpRouting.Builder routing) {
        routing.post("/events", this::create)
               .get("/events/{id}", this::find);
    }

    private void create(ServerRequest request, ServerResponse response) {
        Bodies.requireJson(request);
        NewEvent event = Json.read(Bodies.read(request, maxBodyBytes), NewEvent.class);
        EventView created = inventory.create(event);
        Reply.json(201, created, "/events/" + created.id()).send(response);
    }

    private void find(ServerRequest request, ServerResponse response) {
        String id = request.path().pathParameters().get("id");
        EventView event = inventory.find(id, true)
                .orElseThrow(() -> Problem.notFound("unknown-event", "There is no event " + id));
        Reply.json(200, event, null).send(response);
    }
}
