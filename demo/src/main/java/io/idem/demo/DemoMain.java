package io.idem.demo;

/** The main job: placeholder until the demo lands. */
public final class DemoMain {
  private DemoMain() {}

  public static void main(String[] args) {
    System.out.println("idem demo: not built yet");
  }
}
