import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import type { Citation } from "../api/types";
import { AnswerText } from "./AnswerText";

const cite = (n: number, chunk_id: string, supported = true, sentence = "s"): Citation => ({
  n,
  chunk_id,
  document_id: "d",
  title: `Doc ${n}`,
  section: "S",
  page_start: 1,
  page_end: 2,
  sentence,
  supported,
});

describe("AnswerText citation chips", () => {
  it("turns known [n] markers into chips and leaves unknown ones as text", () => {
    render(
      <AnswerText
        turn={{ answer: "A [1] then B [2][7].", citations: [cite(1, "c1"), cite(2, "c2", false)], sources: [] }}
        onOpenCitation={() => {}}
      />,
    );
    expect(screen.getByRole("button", { name: "Citation 1: Doc 1" })).toHaveTextContent("[1]");
    const unsupported = screen.getByRole("button", { name: /Citation 2: Doc 2 \(not fully supported/ });
    expect(unsupported).toHaveClass("chip-unsupported");
    expect(screen.queryByRole("button", { name: /Citation 7/ })).toBeNull();
    expect(screen.getByText(/\[7\]\./)).toBeInTheDocument();
  });

  it("resolves chips from sources before citations arrive and opens the chunk", async () => {
    const onOpen = vi.fn();
    render(
      <AnswerText
        turn={{
          answer: "Streaming [3]",
          citations: [],
          sources: [
            {
              n: 3,
              chunk_id: "c3",
              document_id: "d",
              title: "Guide",
              section_path: [],
              page_start: null,
              page_end: null,
              score: 1,
              text: "",
            },
          ],
        }}
        onOpenCitation={onOpen}
      />,
    );
    const chip = screen.getByRole("button", { name: "Citation 3: Guide" });
    chip.focus();
    await userEvent.keyboard("{Enter}");
    expect(onOpen).toHaveBeenCalledWith("c3");
  });

  it("renders paragraphs, lists, bold and code around the chips", () => {
    const { container } = render(
      <AnswerText
        turn={{
          answer: "Calibrate **every 42 days [1]**.\n\nSteps:\n1. Insert the `blue key` [1]\n2. Wait [2]\n\n- dry brush",
          citations: [cite(1, "c1"), cite(2, "c2")],
          sources: [],
        }}
        onOpenCitation={() => {}}
      />,
    );
    const root = container.querySelector(".answer-text")!;
    expect(root.querySelectorAll(":scope > p")).toHaveLength(2);
    const bold = root.querySelector("strong")!;
    expect(bold).toHaveTextContent("every 42 days [1]");
    expect(bold.querySelector("button.chip")).not.toBeNull();
    const steps = screen.getAllByRole("list");
    expect(steps.map((l) => l.tagName)).toEqual(["OL", "UL"]);
    expect(steps[0].querySelectorAll("li")).toHaveLength(2);
    expect(screen.getByText("blue key").tagName).toBe("CODE");
    expect(screen.getAllByRole("button", { name: "Citation 1: Doc 1" })).toHaveLength(2);
    expect(screen.getByText("dry brush").tagName).toBe("LI");
  });

  it("never turns answer text into HTML", () => {
    const { container } = render(
      <AnswerText
        turn={{ answer: '<img src="x" onerror="alert(1)"> **<b>hi</b>** `<script>`', citations: [], sources: [] }}
        onOpenCitation={() => {}}
      />,
    );
    expect(container.querySelector("img, b, script")).toBeNull();
    expect(container).toHaveTextContent('<img src="x" onerror="alert(1)"> <b>hi</b> <script>');
  });
});
